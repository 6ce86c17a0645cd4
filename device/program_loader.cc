#include "device/program_loader.h"

#include "common/input_file.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "common/file_util.h"
#include "device/program_parser.h"

namespace dfx::device {

const char* CoreTypeName(CoreType t) { return kCoreTypeText.Name(t); }

const char* KernelOpName(KernelOp op) { return kKernelOpText.Name(op); }

const char* ArgTypeName(ArgType t) { return kArgTypeText.Name(t); }

uint64_t TensorDecl::Numel() const {
  uint64_t n = 1;
  for (uint32_t d : shape) n *= d;
  return n;
}

namespace {

Json InitToJson(const TensorInit& init) {
  switch (init.kind) {
    case InitKind::kZeros:
      return "zeros";
    case InitKind::kOnes:
      return "ones";
    case InitKind::kRange:
      return Json{{"range", Json::array({init.range_start, init.range_step})}};
    case InitKind::kRandom:
      return Json{{"random", init.seed}};
    case InitKind::kValues:
      return Json(init.values);
  }
  return "zeros";
}

void BodyToJson(const Program& p, const std::vector<Statement>& body,
                std::vector<std::string>* labels, Json* out) {
  for (const Statement& st : body) {
    Json s = Json::object();
    switch (st.kind) {
      case Statement::Kind::kSubmit: {
        const Submit& sub = st.submit;
        s["submit"] = p.kernels[sub.kernel].name;
        Json args = Json::array();
        for (const SubmitArg& a : sub.args)
          args.push_back({{"tensor", p.tensors[a.tensor].name}, {"type", ArgTypeName(a.type)}});
        s["args"] = std::move(args);
        if (!sub.scalars.empty()) {
          Json sc = Json::array();
          for (const Scalar& x : sub.scalars)
            sc.push_back({{"dtype", DTypeName(x.dtype)}, {"value", x.value}});
          s["scalars"] = std::move(sc);
        }
        if (sub.block_num != 1) s["block_num"] = sub.block_num;
        if (!sub.dumps.empty()) {
          Json d = Json::array();
          for (int a : sub.dumps) {
            const std::string& n = p.tensors[sub.args[a].tensor].name;
            if (std::find(d.begin(), d.end(), Json(n)) == d.end()) d.push_back(n);
          }
          s["dumps"] = std::move(d);
        }
        if (!sub.label.empty()) s["id"] = sub.label;
        if (!sub.deps.empty()) {
          Json d = Json::array();
          for (int dep : sub.deps) d.push_back((*labels)[dep]);
          s["deps"] = std::move(d);
        }
        labels->push_back(sub.label);
        break;
      }
      case Statement::Kind::kDumpTag:
        s["dump_tag"] = p.tensors[st.tag_tensor].name;
        break;
      case Statement::Kind::kScope: {
        s["scope"] = st.site;
        if (st.manual) s["manual"] = true;
        Json b = Json::array();
        BodyToJson(p, st.body, labels, &b);
        s["body"] = std::move(b);
        break;
      }
    }
    out->push_back(std::move(s));
  }
}

}  // namespace

Result<Program> ParseProgram(const Json& json, const std::string& origin) {
  parsing::Parser parser(origin);
  return parser.Parse(json);
}

Result<Program> ParseProgramText(const std::string& text, const std::string& origin,
                                 const std::function<Status()>& before_program) {
  if (std::optional<Program> fast = ParseProgramFast(text, origin)) {
    if (before_program) DFX_RETURN_IF_ERROR(before_program());
    return std::move(*fast);
  }
  DFX_ASSIGN_OR_RETURN(Json json, ParseJson(text, origin));
  if (before_program) DFX_RETURN_IF_ERROR(before_program());
  return ParseProgram(json, origin);
}

Result<Program> LoadProgram(const std::filesystem::path& path) {
  DFX_ASSIGN_OR_RETURN(std::string text, ReadJsonText(path, kMaxProgramFileBytes));
  DFX_ASSIGN_OR_RETURN(Program p, ParseProgramText(text, path.string()));
  AttachSourceLines(&p, text, path.filename().string());
  return p;
}

namespace {

// Line (1-based) of every object that holds a "scope" key, and of the
// "orchestration" key, by the loader's JSON path ("$.orchestration[3].body[0]").
// A scanner, not a parser: the text was already parsed, this only finds
// positions. Paths are spelt out only for the objects that hold a scope: a
// large program has a container per argument, and a key per field.
std::map<std::string, int> ScopeLines(std::string_view text) {
  struct Frame {
    bool object;
    int line;
    size_t index = 0;          // array: the element being read
    std::string_view raw_key;  // object: the key being read, as written in `text`
    std::string unescaped;     // the key, when it held escapes
    bool escaped = false;
    bool expect_key = true;
    std::string_view key() const { return escaped ? std::string_view(unescaped) : raw_key; }
  };
  std::map<std::string, int> lines;
  std::vector<Frame> stack;
  // The path of stack[depth] (stack[0] is "$"): each frame is its parent's
  // current key or element, which stay put while the frame is open.
  auto path_of = [&](size_t depth) {
    std::string path = "$";
    for (size_t d = 0; d < depth; ++d) {
      const Frame& f = stack[d];
      if (f.object) {
        path.append(".").append(f.key());
      } else {
        path.append("[").append(std::to_string(f.index)).append("]");
      }
    }
    return path;
  };
  int line = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
    } else if (c == '"') {
      // The string's text up to its closing quote; a backslash keeps the
      // character after it (as the key, and as a newline for the line count).
      const size_t begin = ++i;
      bool escaped = false;
      for (; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\' && i + 1 < text.size()) {
          escaped = true;
          ++i;
        }
        if (text[i] == '\n') ++line;
      }
      if (!stack.empty() && stack.back().object && stack.back().expect_key) {
        Frame& f = stack.back();
        f.expect_key = false;
        f.raw_key = text.substr(begin, std::min(i, text.size()) - begin);
        f.escaped = escaped;
        if (escaped) {
          f.unescaped.clear();
          for (size_t k = 0; k < f.raw_key.size(); ++k) {
            if (f.raw_key[k] == '\\' && k + 1 < f.raw_key.size()) ++k;
            f.unescaped.push_back(f.raw_key[k]);
          }
        }
        if (f.key() == "scope") lines[path_of(stack.size() - 1)] = f.line;
        if (f.key() == "orchestration" && stack.size() == 1) lines["$.orchestration"] = line;
      }
    } else if (c == '{' || c == '[') {
      stack.push_back(Frame{c == '{', line});
      if (stack.size() > 256) return {};
    } else if (c == '}' || c == ']') {
      if (stack.empty()) return {};
      stack.pop_back();
    } else if (c == ',') {
      if (stack.empty()) return {};
      Frame& f = stack.back();
      if (f.object) {
        f.expect_key = true;
      } else {
        ++f.index;
      }
    }
  }
  return lines;
}

void AttachLines(std::vector<Statement>& body, const std::map<std::string, int>& lines) {
  for (Statement& st : body) {
    if (st.kind != Statement::Kind::kScope) continue;
    auto it = lines.find(st.json_path);
    st.line = it == lines.end() ? 0 : it->second;
    AttachLines(st.body, lines);
  }
}

}  // namespace

void AttachSourceLines(Program* program, std::string_view text, const std::string& file_name) {
  program->source_file = file_name;
  const std::map<std::string, int> lines = ScopeLines(text);
  auto root = lines.find("$.orchestration");
  program->orchestration_line = root == lines.end() ? 0 : root->second;
  AttachLines(program->orchestration, lines);
}

Json ProgramToJson(const Program& p) {
  Json j = Json::object();
  j["name"] = p.name;
  Json kernels = Json::array();
  for (const Kernel& k : p.kernels) {
    Json kj{{"func_id", k.func_id},
            {"name", k.name},
            {"core_type", CoreTypeName(k.core_type)},
            {"op", KernelOpName(k.op)}};
    if (k.op == KernelOp::kBusy) kj["params"] = {{"duration_us", k.duration_us}};
    if (k.op == KernelOp::kRmsnorm && k.eps != 1e-6) kj["params"] = {{"eps", k.eps}};
    if (k.op == KernelOp::kFail) kj["params"] = {{"message", k.message}};
    kernels.push_back(std::move(kj));
  }
  j["kernels"] = std::move(kernels);
  Json tensors = Json::array();
  for (const TensorDecl& t : p.tensors) {
    Json tj{{"name", t.name}};
    if (t.view_of >= 0) {
      tj["view_of"] = p.tensors[t.view_of].name;
      tj["shape"] = t.shape;
      tj["offset"] = t.offset;
    } else {
      tj["shape"] = t.shape;
      tj["dtype"] = DTypeName(t.dtype);
      if (t.init.kind != InitKind::kZeros) tj["init"] = InitToJson(t.init);
      if (t.resident) tj["resident"] = true;
    }
    tensors.push_back(std::move(tj));
  }
  j["tensors"] = std::move(tensors);
  Json orch = Json::array();
  std::vector<std::string> labels;
  BodyToJson(p, p.orchestration, &labels, &orch);
  j["orchestration"] = std::move(orch);
  return j;
}

namespace {
void AssignPaths(std::vector<Statement>* body, const std::string& path) {
  for (size_t i = 0; i < body->size(); ++i) {
    Statement& st = (*body)[i];
    st.json_path = path + "[" + std::to_string(i) + "]";
    if (st.kind == Statement::Kind::kScope) AssignPaths(&st.body, st.json_path + ".body");
  }
}
}  // namespace

void AssignJsonPaths(Program* program) { AssignPaths(&program->orchestration, "$.orchestration"); }

Status ValidateProgram(const Program& program) {
  return ParseProgram(ProgramToJson(program),
                      program.origin.empty() ? "<generated>" : program.origin)
      .status();
}

}  // namespace dfx::device
