#include "device/program_loader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <vector>

#include "common/file_util.h"
#include "device/generators.h"

namespace dfx::device {
namespace {

const char* kGood = R"({
  "name": "p",
  "kernels": [
    {"func_id": 0, "name": "add", "core_type": "aiv", "op": "add"},
    {"func_id": 1, "name": "mm", "core_type": "aic", "op": "matmul"},
    {"func_id": 2, "name": "spin", "core_type": "aiv", "op": "busy", "params": {"duration_us": 5}}
  ],
  "tensors": [
    {"name": "a", "shape": [4, 8], "dtype": "FLOAT32", "init": "ones"},
    {"name": "b", "shape": [4, 8], "dtype": "FLOAT16", "init": {"range": [0, 0.5]}},
    {"name": "w", "shape": [8, 2], "dtype": "BFLOAT16", "init": {"random": 3}},
    {"name": "c", "shape": [4, 8], "dtype": "FLOAT32"},
    {"name": "m", "shape": [4, 2], "dtype": "FLOAT32"},
    {"name": "row", "view_of": "a", "shape": [8], "offset": 8}
  ],
  "orchestration": [
    {"submit": "add", "args": [{"tensor": "a", "type": "INPUT"}, {"tensor": "b", "type": "INPUT"},
                                {"tensor": "c", "type": "OUTPUT"}], "id": "first", "dumps": ["a"]},
    {"dump_tag": "c"},
    {"scope": "inner", "manual": true, "body": [
      {"submit": "mm", "args": [{"tensor": "c", "type": "INPUT"}, {"tensor": "w", "type": "INPUT"},
                               {"tensor": "m", "type": "OUTPUT"}], "deps": ["first"], "block_num": 2}
    ]},
    {"submit": "spin", "args": [], "scalars": [{"dtype": "FLOAT32", "value": 0.5}]}
  ]
})";

void ExpectSamePaths(const std::vector<Statement>& a, const std::vector<Statement>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].json_path, b[i].json_path);
    ExpectSamePaths(a[i].body, b[i].body);
  }
}

// Everything the loader sets: the JSON form, the statements' paths, the
// explicit-dep index space and the origin.
void ExpectSameProgram(const Program& a, const Program& b) {
  EXPECT_EQ(ProgramToJson(a).dump(), ProgramToJson(b).dump());
  EXPECT_EQ(a.submit_count, b.submit_count);
  EXPECT_EQ(a.origin, b.origin);
  ExpectSamePaths(a.orchestration, b.orchestration);
}

// The program `text` holds, read through ParseProgramText; every call also
// checks that the JSON document's reading (ParseJson, ParseProgram) gives
// the same program or the same error.
Result<Program> Parse(const std::string& text) {
  Result<Program> document = [&]() -> Result<Program> {
    auto j = ParseJson(text, "prog.json");
    if (!j.ok()) return j.status();
    return ParseProgram(*j, "prog.json");
  }();
  Result<Program> read = ParseProgramText(text, "prog.json");
  EXPECT_EQ(read.ok(), document.ok()) << text;
  if (read.ok() && document.ok()) {
    ExpectSameProgram(*read, *document);
  } else if (!read.ok() && !document.ok()) {
    EXPECT_EQ(read.status().ToString(), document.status().ToString());
  }
  return read;
}

// Replaces the first occurrence of `from` in kGood.
std::string Mutate(const std::string& from, const std::string& to) {
  std::string s = kGood;
  auto pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  return s.replace(pos, from.size(), to);
}

void ExpectError(const std::string& text, const std::string& path, const std::string& expected) {
  auto p = Parse(text);
  ASSERT_FALSE(p.ok()) << "parsed but should have failed at " << path;
  const std::string& m = p.status().message();
  EXPECT_NE(m.find("prog.json"), std::string::npos) << m;
  EXPECT_NE(m.find("at " + path + ":"), std::string::npos) << m;
  EXPECT_NE(m.find(expected), std::string::npos) << m;
}

TEST(ProgramLoaderTest, ParsesEveryConstruct) {
  auto p = Parse(kGood);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->name, "p");
  ASSERT_EQ(p->kernels.size(), 3u);
  EXPECT_EQ(p->kernels[2].duration_us, 5);
  EXPECT_EQ(p->tensors[5].view_of, 0);
  EXPECT_EQ(p->tensors[5].offset, 8u);
  EXPECT_EQ(p->tensors[1].dtype, DType::kFloat16);
  ASSERT_EQ(p->orchestration.size(), 4u);
  EXPECT_EQ(p->orchestration[0].submit.dumps, std::vector<int>{0});
  EXPECT_EQ(p->orchestration[1].kind, Statement::Kind::kDumpTag);
  const Statement& scope = p->orchestration[2];
  EXPECT_TRUE(scope.manual);
  EXPECT_EQ(scope.body[0].submit.deps, std::vector<int>{0});
  EXPECT_EQ(scope.body[0].submit.block_num, 2);
  EXPECT_EQ(scope.body[0].json_path, "$.orchestration[2].body[0]");
  EXPECT_EQ(p->submit_count, 3);
}

// The text reader (ParseProgramFast) takes a program in the usual forms
// whole, as the JSON document reads it, whatever the white space.
TEST(ProgramLoaderTest, TextReaderReadsTheUsualFormsAsTheDocumentDoes) {
  const std::string no_scalars =
      Mutate(", \"scalars\": [{\"dtype\": \"FLOAT32\", \"value\": 0.5}]", "");
  std::vector<std::string> texts = {no_scalars};
  LayeredDagOptions dag;
  dag.tasks = 300;
  AttentionDecodeOptions attention;
  attention.dump_tags = true;
  for (const Program& g : {GenerateLayeredDag(dag), GenerateAttentionDecode(attention)}) {
    for (int indent : {-1, 0, 2}) texts.push_back(ProgramToJson(g).dump(indent));
    // The orchestration first, not last.
    const Json j = ProgramToJson(g);
    Json reordered = Json::object();
    for (const char* key : {"orchestration", "name", "kernels", "tensors"}) reordered[key] = j[key];
    texts.push_back(reordered.dump());
  }
  for (const std::string& text : texts) {
    std::optional<Program> fast = ParseProgramFast(text, "prog.json");
    ASSERT_TRUE(fast.has_value()) << text.substr(0, 200);
    auto document = ParseJson(text, "prog.json");
    ASSERT_TRUE(document.ok());
    auto program = ParseProgram(*document, "prog.json");
    ASSERT_TRUE(program.ok()) << program.status().ToString();
    ExpectSameProgram(*fast, *program);
  }
  // The forms it reads: scopes nested, labels and deps, dumps, dump tags,
  // block_num, and their keys in any order.
  std::optional<Program> p = ParseProgramFast(no_scalars, "prog.json");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->orchestration[2].body[0].submit.deps, std::vector<int>{0});
  EXPECT_EQ(p->orchestration[2].body[0].json_path, "$.orchestration[2].body[0]");
  EXPECT_TRUE(p->orchestration[2].manual);
  EXPECT_EQ(p->submit_count, 3);
}

// Anything else is left to the JSON document, which gives the program or
// the error (Parse checks that ParseProgramText agrees with it).
TEST(ProgramLoaderTest, TextReaderLeavesEverythingElseToTheDocument) {
  const std::vector<std::string> texts = {
      kGood,  // a scalar (a double, read by the JSON reader only)
      ProgramToJson(GenerateVectorPipeline()).dump(),              // scalars too
      Mutate("\"submit\": \"add\"", "\"submit\": \"a\\u0064d\""),  // an escape
      Mutate("\"submit\": \"add\"", "\"submit\": \"add\", \"submit\": \"mm\""),
      Mutate("\"block_num\": 2", "\"block_num\": 2.0"),
      Mutate("\"block_num\": 2", "\"block_num\": -2"),
      Mutate("\"block_num\": 2", "\"block_num\": 02"),
      Mutate("\"block_num\": 2", "\"block_num\": 4097"),
      Mutate("\"deps\": [\"first\"]", "\"deps\": [\"second\"]"),
      Mutate("{\"dump_tag\": \"c\"}", "{\"dump_tag\": \"c\", \"scope\": \"x\"}"),
      Mutate("{\"dump_tag\": \"c\"}", "{}"),
      Mutate("\"manual\": true", "\"manual\": 1"),
      Mutate("\"scope\": \"inner\"", "\"scope\": \"\""),
      Mutate("{\"tensor\": \"a\", \"type\": \"INPUT\"}", "{\"tensor\": \"a\"}"),
      Mutate("{\"tensor\": \"a\", \"type\": \"INPUT\"}",
             "{\"tensor\": \"zz\", \"type\": \"INPUT\"}"),
      Mutate("{\"tensor\": \"c\", \"type\": \"OUTPUT\"}",
             "{\"tensor\": \"row\", \"type\": \"OUTPUT\"}"),
      Mutate("\"type\": \"INPUT\"}", "\"type\": \"INPUT\",}"),
      Mutate("\"orchestration\": [", "\"orchestration\": [], \"orchestration\": ["),
      Mutate("\"name\": \"p\",", "\"name\": \"p\", \"colour\": 1,"),
      std::string(kGood) + " x",
      std::string("\xEF\xBB\xBF") + kGood,
      Mutate("\"scope\": \"inner\"", "\"scope\": \"in\xC3\xA9ner\""),
      "{\"name\": \"x\", \"kernels\": [], \"tensors\": [], \"orchestration\": {}}",
      "{\"name\": \"x\", \"kernels\": [], \"tensors\": [], \"orchestration\": [1]}",
  };
  for (const std::string& text : texts) {
    EXPECT_FALSE(ParseProgramFast(text, "prog.json").has_value()) << text;
    (void)Parse(text);
  }
  // Scopes nest 64 deep, and no deeper, either way.
  auto nested = [](int depth) {
    std::string body = "[]";
    for (int i = 0; i < depth; ++i) body = "[{\"scope\": \"s\", \"body\": " + body + "}]";
    return "{\"name\": \"x\", \"tensors\": [], \"kernels\": [{\"func_id\": 0, \"name\": \"k\", "
           "\"core_type\": \"aiv\", \"op\": \"add\"}], \"orchestration\": " +
           body + "}";
  };
  EXPECT_TRUE(ParseProgramFast(nested(64), "prog.json").has_value());
  EXPECT_TRUE(Parse(nested(64)).ok());
  EXPECT_FALSE(ParseProgramFast(nested(65), "prog.json").has_value());
  EXPECT_FALSE(Parse(nested(65)).ok());
}

TEST(ProgramLoaderTest, ScopeStatementsGetTheirFileLines) {
  // kGood: "orchestration" on line 16, the scope statement on line 20. A
  // nested scope whose "body" comes before its "scope" key still gets the
  // line of its own object.
  auto p = Parse(kGood);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  AttachSourceLines(&*p, kGood, "prog.json");
  EXPECT_EQ(p->source_file, "prog.json");
  EXPECT_EQ(p->orchestration_line, 16);
  ASSERT_EQ(p->orchestration[2].kind, Statement::Kind::kScope);
  EXPECT_EQ(p->orchestration[2].line, 20);
  const std::string nested = R"({"name": "n", "tensors": [],
 "kernels": [{"func_id": 0, "name": "spin", "core_type": "aiv", "op": "busy",
              "params": {"duration_us": 1}}],
 "orchestration": [
  {"scope": "outer", "body": [
    {"body": [{"submit": "spin", "args": []}], "scope": "in \"quoted\" ,[{"}
  ]}
 ]})";
  auto q = Parse(nested);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  AttachSourceLines(&*q, nested, "n.json");
  EXPECT_EQ(q->orchestration_line, 4);
  EXPECT_EQ(q->orchestration[0].line, 5);
  EXPECT_EQ(q->orchestration[0].body[0].line, 6);
}

TEST(ProgramLoaderTest, JsonRoundTripIsStable) {
  auto p = Parse(kGood);
  ASSERT_TRUE(p.ok());
  Json once = ProgramToJson(*p);
  auto again = ParseProgram(once, "roundtrip");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(ProgramToJson(*again).dump(), once.dump());
}

TEST(ProgramLoaderTest, ExamplesLoad) {
  for (const char* name : {"vector_pipeline.json", "attention_decode.json", "large_dag_2k.json"}) {
    auto p = LoadProgram(std::filesystem::path(DFX_SOURCE_DIR) / "examples" / name);
    EXPECT_TRUE(p.ok()) << name << ": " << p.status().ToString();
  }
}

TEST(ProgramLoaderTest, UnknownKeys) {
  ExpectError(Mutate("\"name\": \"p\",", "\"name\": \"p\", \"colour\": 1,"), "$.colour",
              "unknown key \"colour\"; expected one of: name, kernels, tensors, orchestration");
  ExpectError(Mutate("\"type\": \"INPUT\"}", "\"type\": \"INPUT\", \"flag\": 1}"),
              "$.orchestration[0].args[0].flag", "unknown key");
  ExpectError(Mutate("\"op\": \"add\"}", "\"op\": \"add\", \"params\": {\"x\": 1}}"),
              "$.kernels[0].params.x", "unknown key");
}

TEST(ProgramLoaderTest, UnknownKernel) {
  ExpectError(Mutate("{\"submit\": \"add\"", "{\"submit\": \"sub\""), "$.orchestration[0].submit",
              "expected the name of a declared kernel (one of add, mm, spin), got string \"sub\"");
  ExpectError(Mutate("\"op\": \"add\"", "\"op\": \"conv\""), "$.kernels[0].op", "expected an op");
}

TEST(ProgramLoaderTest, DanglingTensorName) {
  ExpectError(Mutate("{\"tensor\": \"b\", \"type\": \"INPUT\"}",
                     "{\"tensor\": \"q\", \"type\": \"INPUT\"}"),
              "$.orchestration[0].args[1].tensor", "expected the name of a declared tensor");
  ExpectError(Mutate("\"view_of\": \"a\"", "\"view_of\": \"zz\""), "$.tensors[5].view_of",
              "a tensor declared earlier");
}

TEST(ProgramLoaderTest, ShapeMismatchPerOp) {
  // elementwise: b must have c's shape
  ExpectError(Mutate("{\"name\": \"b\", \"shape\": [4, 8]", "{\"name\": \"b\", \"shape\": [4, 9]"),
              "$.orchestration[0].args[1].tensor", "(elementwise), but it has shape [4,9]");
  // matmul [m,k]x[k,n]->[m,n]: m must be [4,2]
  ExpectError(Mutate("{\"name\": \"m\", \"shape\": [4, 2]", "{\"name\": \"m\", \"shape\": [4, 3]"),
              "$.orchestration[2].body[0].args[2].tensor", "an output of shape [4,2]");
  ExpectError(Mutate("{\"name\": \"w\", \"shape\": [8, 2]", "{\"name\": \"w\", \"shape\": [7, 2]"),
              "$.orchestration[2].body[0].args[1].tensor", "a 2-D [k,n] tensor with k=8");
}

TEST(ProgramLoaderTest, DumpsMustNameAnArgumentOfThatSubmit) {
  ExpectError(Mutate("\"dumps\": [\"a\"]", "\"dumps\": [\"w\"]"), "$.orchestration[0].dumps[0]",
              "expected a tensor passed in this submit's args");
}

TEST(ProgramLoaderTest, DumpTagOfUnknownName) {
  ExpectError(Mutate("{\"dump_tag\": \"c\"}", "{\"dump_tag\": \"nope\"}"),
              "$.orchestration[1].dump_tag", "expected the name of a declared tensor");
}

TEST(ProgramLoaderTest, BadDTypesAndValues) {
  ExpectError(Mutate("\"dtype\": \"FLOAT16\"", "\"dtype\": \"FLOAT8\""), "$.tensors[1].dtype",
              "expected a dtype (one of FLOAT32, FLOAT16, BFLOAT16");
  ExpectError(
      Mutate("{\"dtype\": \"FLOAT32\", \"value\": 0.5}", "{\"dtype\": \"DOUBLE\", \"value\": 0.5}"),
      "$.orchestration[3].scalars[0].dtype", "expected a dtype");
  ExpectError(Mutate("\"type\": \"INPUT\"", "\"type\": \"READ\""),
              "$.orchestration[0].args[0].type",
              "expected one of INPUT, OUTPUT, INOUT, OUTPUT_EXISTING");
  ExpectError(Mutate("\"init\": \"ones\"", "\"init\": [1, 2]"), "$.tensors[0].init",
              "an array of exactly 32 numbers");
  ExpectError(Mutate("\"offset\": 8", "\"offset\": 30"), "$.tensors[5]", "does not fit");
  ExpectError(Mutate("\"block_num\": 2", "\"block_num\": 0"),
              "$.orchestration[2].body[0].block_num", "expected an integer in [1, 4096]");
  ExpectError(Mutate("\"params\": {\"duration_us\": 5}", "\"params\": {}"),
              "$.kernels[2].params.duration_us", "a number of microseconds");
  ExpectError(Mutate("\"core_type\": \"aic\"", "\"core_type\": \"cube\""), "$.kernels[1].core_type",
              "expected \"aic\" or \"aiv\"");
}

TEST(ProgramLoaderTest, ExplicitDepsNeedAnEarlierLabel) {
  ExpectError(Mutate("\"deps\": [\"first\"]", "\"deps\": [\"later\"]"),
              "$.orchestration[2].body[0].deps[0]", "the \"id\" label of an earlier submit");
}

TEST(ProgramLoaderTest, SyntaxErrorsAndMissingFilesNameTheFile) {
  auto p = Parse("{\"name\": ");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("prog.json: not valid JSON"), std::string::npos);
  auto missing = LoadProgram("/nonexistent/prog.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/nonexistent/prog.json"), std::string::npos);
}

TEST(ProgramLoaderTest, WrongTopLevelTypesNeverCrash) {
  for (const char* text :
       {"[]", "3", "{\"name\": \"x\"}", "{\"name\": \"x\", \"kernels\": {}}",
        "{\"name\": \"x\", \"kernels\": [1], \"tensors\": [], \"orchestration\": []}",
        "{\"name\": \"x\", \"kernels\": [{\"func_id\": -1}]}"}) {
    auto p = Parse(text);
    EXPECT_FALSE(p.ok()) << text;
    EXPECT_NE(p.status().message().find("prog.json: at $"), std::string::npos)
        << p.status().message();
  }
}

}  // namespace
}  // namespace dfx::device
