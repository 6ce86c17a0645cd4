// Two parsers, kept apart: this one skips the JSON DOM (its speed); fuzz checks they agree.
//
// The program text reader (ParseProgramFast): the orchestration is read
// straight from the program's text in the usual statement forms, the rest
// through the JSON reader, and anything else goes back to the full parser.
#include <string>
#include <string_view>

#include "device/program_loader.h"
#include "device/program_parser.h"

namespace dfx::device {

using parsing::IsJsonSpace;
using parsing::Parser;
using parsing::TextCursor;

namespace {

// Where the value of the top-level key "orchestration" is in `t`: [*begin,
// *end). False when the text is not a plain top-level object with that key
// once (a key with an escape, a repeated key, text after the object). With
// `last_key`, an orchestration that is the object's last key, as programs
// are written, is taken to end at the last ']' before the closing '}'
// without a look at what lies between (*last_key stays true then; the
// text reader checks that its array ends there).
bool FindOrchestration(std::string_view t, size_t* begin, size_t* end, bool* last_key) {
  size_t last = t.size();
  while (last > 0 && IsJsonSpace(t[last - 1])) --last;
  size_t tail = last > 0 && t[last - 1] == '}' ? last - 1 : 0;
  while (tail > 0 && IsJsonSpace(t[tail - 1])) --tail;
  TextCursor c(t, 0);
  if (!c.Eat('{')) return false;
  bool found = false;
  do {
    std::string_view key;
    if (!c.Str(&key) || !c.Eat(':')) return false;
    c.Ws();
    const size_t value = c.pos();
    const bool orchestration = key == "orchestration";
    if (*last_key && orchestration && !found && tail > value && t[tail - 1] == ']') {
      *begin = value;
      *end = tail;
      return true;
    }
    if (!c.Skip()) return false;
    *last_key = false;
    if (orchestration) {
      if (found) return false;
      found = true;
      *begin = value;
      *end = c.pos();
    }
  } while (c.Eat(','));
  if (!c.Eat('}')) return false;
  c.Ws();
  return found && c.pos() == t.size();
}

// ParseProgramFast with or without FindOrchestration's `last_key` guess.
// *guess_failed: the guess was taken and may be what failed (the rest of the
// object did not read, or the orchestration, read whole, ended before the
// guessed end: a key follows it).
std::optional<Program> ReadProgramText(std::string_view text, const std::string& origin,
                                       bool last_key, bool* guess_failed) {
  size_t begin = 0, end = 0;
  *guess_failed = false;
  if (!FindOrchestration(text, &begin, &end, &last_key)) return std::nullopt;
  *guess_failed = last_key;  // until the orchestration is read
  // Everything but the orchestration goes through the JSON reader (a few
  // KiB: kernels, tensors); the orchestration is read from the text.
  std::string rest;
  rest.reserve(text.size() - (end - begin) + 2);
  rest.append(text.substr(0, begin)).append("[]").append(text.substr(end));
  auto json = ParseJson(rest, origin);
  if (!json.ok()) return std::nullopt;
  Parser parser(origin);
  bool read = false;  // the orchestration, whole
  auto program = parser.Parse(*json, [&](Program* p) {
    size_t at = begin;
    read = parser.FastBody(text, &at, "$.orchestration", p, &p->orchestration, 0);
    *guess_failed = last_key && read && at != end;
    read = read && at == end;
    return read ? Status::Ok() : Internal("the orchestration is not in the text reader's forms");
  });
  if (!program.ok() || !read) return std::nullopt;
  return std::move(*program);
}

}  // namespace

std::optional<Program> ParseProgramFast(std::string_view text, const std::string& origin) {
  bool guess_failed = false;
  std::optional<Program> p = ReadProgramText(text, origin, /*last_key=*/true, &guess_failed);
  if (!p && guess_failed) p = ReadProgramText(text, origin, false, &guess_failed);
  return p;
}

}  // namespace dfx::device

namespace dfx::device::parsing {

bool Parser::FastBody(std::string_view text, size_t* at, const std::string& path, Program* p,
                      std::vector<Statement>* out, int depth) {
  TextCursor c(text, *at);
  if (!c.Eat('[')) return false;
  if (!c.Eat(']')) {
    for (size_t i = 0;; ++i) {
      Statement st;
      // Piece by piece: gcc 12 warns (-Wrestrict, a false positive) about
      // the temporaries of path + "[" + ...
      st.json_path.reserve(path.size() + 12);
      st.json_path += path;
      st.json_path += '[';
      st.json_path += std::to_string(i);
      st.json_path += ']';
      size_t pos = c.pos();
      if (!FastStatement(text, &pos, p, &st, depth)) return false;
      out->push_back(std::move(st));
      c = TextCursor(text, pos);
      if (c.Eat(',')) continue;
      if (c.Eat(']')) break;
      return false;
    }
  }
  *at = c.pos();
  return true;
}

bool Parser::FastStatement(std::string_view text, size_t* at, Program* p, Statement* st,
                           int depth) {
  TextCursor c(text, *at);
  if (!c.Eat('{') || c.Eat('}')) return false;
  enum Key : unsigned {
    kSubmit = 1,
    kArgs = 2,
    kBlockNum = 4,
    kDumps = 8,
    kId = 16,
    kDeps = 32,
    kDumpTag = 64,
    kScope = 128,
    kManual = 256,
    kBody = 512,
  };
  unsigned seen = 0;
  std::string_view kernel_name, id, tag, site;
  std::vector<SubmitArg> args;
  std::vector<std::string_view> dumps, deps;
  int64_t block_num = 1;
  bool manual = false;
  do {
    std::string_view key;
    if (!c.Str(&key) || !c.Eat(':')) return false;
    unsigned k = 0;
    bool ok = false;
    if (key == "submit") {
      k = kSubmit;
      ok = c.Str(&kernel_name);
    } else if (key == "args") {
      k = kArgs;
      ok = FastArgs(c, *p, &args);
    } else if (key == "block_num") {
      k = kBlockNum;
      ok = c.Int(&block_num) && block_num >= 1 && block_num <= 4096;
    } else if (key == "dumps") {
      k = kDumps;
      ok = c.StrArray(&dumps);
    } else if (key == "id") {
      k = kId;
      ok = c.Str(&id) && !id.empty();
    } else if (key == "deps") {
      k = kDeps;
      ok = c.StrArray(&deps);
    } else if (key == "dump_tag") {
      k = kDumpTag;
      ok = c.Str(&tag);
    } else if (key == "scope") {
      k = kScope;
      ok = c.Str(&site) && !site.empty();
    } else if (key == "manual") {
      k = kManual;
      ok = c.Bool(&manual);
    } else if (key == "body") {
      // A scope's body; its submits come in text order either way.
      k = kBody;
      c.Ws();
      size_t pos = c.pos();
      std::string body_path = st->json_path;
      body_path += ".body";
      ok = depth < 64 && FastBody(text, &pos, body_path, p, &st->body, depth + 1);
      c = TextCursor(text, pos);
    }
    if (!ok || (seen & k) != 0) return false;  // an unknown or repeated key too
    seen |= k;
  } while (c.Eat(','));
  if (!c.Eat('}')) return false;
  *at = c.pos();

  if (seen & kSubmit) {
    if ((seen & ~(kSubmit | kArgs | kBlockNum | kDumps | kId | kDeps)) != 0 || !(seen & kArgs))
      return false;
    st->kind = Statement::Kind::kSubmit;
    Submit& sub = st->submit;
    const int* kernel = Find(kernel_index_, kernel_name);
    if (kernel == nullptr) return false;
    sub.kernel = *kernel;
    sub.args = std::move(args);
    sub.block_num = static_cast<int>(block_num);
    for (std::string_view name : dumps) {
      const int* t = Find(tensor_index_, name);
      if (t == nullptr || !MarkDumps(&sub, *t)) return false;
    }
    if (seen & kId) {
      if (Find(labels_, id) != nullptr) return false;
      sub.label = std::string(id);
    }
    for (std::string_view label : deps) {
      const int* d = Find(labels_, label);
      if (d == nullptr) return false;
      sub.deps.push_back(*d);
    }
    if (!CheckOp(p->kernels[sub.kernel], sub, *p, st->json_path, nullptr).ok()) return false;
    if (!sub.label.empty()) labels_.emplace(sub.label, submit_count_);
    ++submit_count_;
    return true;
  }
  if (seen & kDumpTag) {
    if (seen != kDumpTag) return false;
    st->kind = Statement::Kind::kDumpTag;
    const int* t = Find(tensor_index_, tag);
    if (t == nullptr) return false;
    st->tag_tensor = *t;
    return true;
  }
  if ((seen & kScope) && (seen & kBody) && (seen & ~(kScope | kManual | kBody)) == 0) {
    st->kind = Statement::Kind::kScope;
    st->site = std::string(site);
    st->manual = manual;
    return true;
  }
  return false;
}

bool Parser::FastArgs(TextCursor& c, const Program& p, std::vector<SubmitArg>* out) const {
  if (!c.Eat('[')) return false;
  if (c.Eat(']')) return true;
  do {
    if (out->size() == 32 || !c.Eat('{')) return false;
    std::string_view tensor, type;
    bool has_tensor = false, has_type = false;
    do {
      std::string_view key;
      if (!c.Str(&key) || !c.Eat(':')) return false;
      if (key == "tensor" && !has_tensor) {
        has_tensor = c.Str(&tensor);
        if (!has_tensor) return false;
      } else if (key == "type" && !has_type) {
        has_type = c.Str(&type);
        if (!has_type) return false;
      } else {
        return false;
      }
    } while (c.Eat(','));
    if (!c.Eat('}') || !has_tensor || !has_type) return false;
    SubmitArg sa;
    const int* t = Find(tensor_index_, tensor);
    if (t == nullptr) return false;
    sa.tensor = *t;
    const std::optional<ArgType> arg_type = ArgTypeNamed(type);
    if (!arg_type) return false;
    sa.type = *arg_type;
    if (sa.type == ArgType::kOutput && p.tensors[sa.tensor].view_of >= 0) return false;
    out->push_back(sa);
  } while (c.Eat(','));
  return c.Eat(']');
}

}  // namespace dfx::device::parsing
