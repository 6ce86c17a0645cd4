#include "device/program_loader.h"

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

namespace dfx::device {

const char* CoreTypeName(CoreType t) { return t == CoreType::kAic ? "aic" : "aiv"; }

const char* KernelOpName(KernelOp op) {
  switch (op) {
    case KernelOp::kAdd:
      return "add";
    case KernelOp::kMul:
      return "mul";
    case KernelOp::kMatmul:
      return "matmul";
    case KernelOp::kSoftmax:
      return "softmax";
    case KernelOp::kRmsnorm:
      return "rmsnorm";
    case KernelOp::kCopy:
      return "copy";
    case KernelOp::kReduceSum:
      return "reduce_sum";
    case KernelOp::kBusy:
      return "busy";
    case KernelOp::kFail:
      return "fail";
  }
  return "?";
}

const char* ArgTypeName(ArgType t) {
  switch (t) {
    case ArgType::kInput:
      return "INPUT";
    case ArgType::kOutput:
      return "OUTPUT";
    case ArgType::kInout:
      return "INOUT";
    case ArgType::kOutputExisting:
      return "OUTPUT_EXISTING";
  }
  return "?";
}

uint64_t TensorDecl::Numel() const {
  uint64_t n = 1;
  for (uint32_t d : shape) n *= d;
  return n;
}

namespace {

constexpr KernelOp kAllOps[] = {KernelOp::kAdd,       KernelOp::kMul,     KernelOp::kMatmul,
                                KernelOp::kSoftmax,   KernelOp::kRmsnorm, KernelOp::kCopy,
                                KernelOp::kReduceSum, KernelOp::kBusy,    KernelOp::kFail};
constexpr ArgType kAllArgTypes[] = {ArgType::kInput, ArgType::kOutput, ArgType::kInout,
                                    ArgType::kOutputExisting};

std::string ShapeString(const std::vector<uint32_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

bool IsJsonSpace(char ch) { return ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t'; }

// A cursor over JSON text that reads the plain forms only (the text reader
// of the orchestration, ParseProgramFast): strings of printable ASCII
// without escapes, non-negative integers without a fraction or exponent.
// Each read skips white space first and is false when the text holds
// anything else there.
class TextCursor {
 public:
  TextCursor(std::string_view text, size_t at) : t_(text), i_(at) {}
  size_t pos() const { return i_; }
  void Ws() {
    while (i_ < t_.size() && IsJsonSpace(t_[i_])) ++i_;
  }
  bool Eat(char ch) {
    Ws();
    if (i_ >= t_.size() || t_[i_] != ch) return false;
    ++i_;
    return true;
  }
  bool Str(std::string_view* out) {
    if (!Eat('"')) return false;
    const size_t begin = i_;
    for (; i_ < t_.size(); ++i_) {
      const auto ch = static_cast<unsigned char>(t_[i_]);
      if (ch == '"') {
        *out = t_.substr(begin, i_ - begin);
        ++i_;
        return true;
      }
      if (ch < 0x20 || ch >= 0x7f || ch == '\\') return false;
    }
    return false;
  }
  // At most 9 digits.
  bool Int(int64_t* out) {
    Ws();
    const size_t begin = i_;
    int64_t v = 0;
    while (i_ < t_.size() && t_[i_] >= '0' && t_[i_] <= '9' && i_ - begin < 10) {
      v = v * 10 + (t_[i_] - '0');
      ++i_;
    }
    const size_t n = i_ - begin;
    if (n == 0 || n > 9 || (n > 1 && t_[begin] == '0')) return false;
    if (i_ < t_.size() && (t_[i_] == '.' || t_[i_] == 'e' || t_[i_] == 'E')) return false;
    *out = v;
    return true;
  }
  bool Bool(bool* out) {
    Ws();
    for (bool v : {true, false}) {
      const std::string_view word = v ? "true" : "false";
      if (t_.substr(i_, word.size()) == word) {
        i_ += word.size();
        *out = v;
        return true;
      }
    }
    return false;
  }
  bool StrArray(std::vector<std::string_view>* out) {
    if (!Eat('[')) return false;
    if (Eat(']')) return true;
    do {
      std::string_view v;
      if (!Str(&v)) return false;
      out->push_back(v);
    } while (Eat(','));
    return Eat(']');
  }
  // Moves past any one JSON value: a string with its escapes, an array or
  // object by its brackets, anything else up to the next delimiter. False
  // where no value can end. Syntax is not checked: the caller's reader does.
  bool Skip() {
    Ws();
    size_t i = i_;
    int depth = 0;
    do {
      if (i >= t_.size()) return false;
      const char ch = t_[i];
      if (ch == '"') {
        for (++i; i < t_.size() && t_[i] != '"'; ++i) {
          if (t_[i] == '\\') ++i;
        }
        if (i >= t_.size()) return false;
        ++i;
      } else if (ch == '[' || ch == '{') {
        if (++depth > kMaxJsonDepth) return false;
        ++i;
      } else if (ch == ']' || ch == '}') {
        if (depth == 0) return false;
        --depth;
        ++i;
      } else if (depth == 0) {
        const size_t begin = i;
        while (i < t_.size() && !IsJsonSpace(t_[i]) && t_[i] != ',' && t_[i] != '}' && t_[i] != ']')
          ++i;
        if (i == begin) return false;
      } else {
        ++i;
      }
    } while (depth > 0);
    i_ = i;
    return true;
  }

 private:
  std::string_view t_;
  size_t i_;
};

// The argument type named `name` ("INPUT", ...), if any.
std::optional<ArgType> ArgTypeNamed(std::string_view name) {
  for (ArgType t : kAllArgTypes) {
    if (name == ArgTypeName(t)) return t;
  }
  return std::nullopt;
}

// Marks for dumping every argument of `sub` that passes `tensor`; false when
// none does.
bool MarkDumps(Submit* sub, int tensor) {
  bool any = false;
  for (size_t a = 0; a < sub->args.size(); ++a) {
    if (sub->args[a].tensor == tensor) {
      sub->dumps.push_back(static_cast<int>(a));
      any = true;
    }
  }
  return any;
}

// Parses one program; `file_` names the source in every error.
class Parser {
 public:
  explicit Parser(std::string file) : file_(std::move(file)) {}

  // `body`, when given, reads the orchestration instead of j's (the text
  // reader; j's orchestration is then an empty array).
  Result<Program> Parse(const Json& j, const std::function<Status(Program*)>& body = nullptr) {
    Program p;
    p.origin = file_;
    if (!j.is_object())
      return Err("$", "a JSON object with name, kernels, tensors, orchestration", j);
    DFX_RETURN_IF_ERROR(CheckKeys(j, "$", {"name", "kernels", "tensors", "orchestration"}));
    if (!j.contains("name") || !j["name"].is_string() || j["name"].get<std::string>().empty())
      return Err("$.name", "a non-empty string", j.value("name", Json()));
    p.name = j["name"].get<std::string>();
    DFX_RETURN_IF_ERROR(ParseKernels(j, &p));
    DFX_RETURN_IF_ERROR(ParseTensors(j, &p));
    if (!j.contains("orchestration") || !j["orchestration"].is_array())
      return Err("$.orchestration", "an array of statements", j.value("orchestration", Json()));
    if (body) {
      DFX_RETURN_IF_ERROR(body(&p));
    } else {
      DFX_RETURN_IF_ERROR(ParseBody(j["orchestration"], "$.orchestration", &p, &p.orchestration));
    }
    p.submit_count = submit_count_;
    return p;
  }

  // ---- The orchestration read from the program's text ----------------------
  //
  // ParseBody over the text of an orchestration array instead of its JSON
  // document, for the statement forms programs are written in: submits (no
  // scalars), dump tags and scopes, every string plain (printable ASCII, no
  // escape), every integer plain. True when it read the whole array into
  // `out` exactly as ParseBody reads the document. False on anything else,
  // including every error: the caller then reads the document, whose reading
  // says what is wrong. `*at` is where the array ends.
  bool FastBody(std::string_view text, size_t* at, const std::string& path, Program* p,
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

 private:
  template <typename Map>
  static const int* Find(const Map& map, std::string_view name) {
    auto it = map.find(name);
    return it == map.end() ? nullptr : &it->second;
  }

  // One statement object at `*at` (see FastBody).
  bool FastStatement(std::string_view text, size_t* at, Program* p, Statement* st, int depth) {
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

  // A submit's "args": at most 32 {"tensor": name, "type": name} objects.
  bool FastArgs(TextCursor& c, const Program& p, std::vector<SubmitArg>* out) const {
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

  Status Err(const std::string& path, const std::string& expected, const Json& got) const {
    return JsonError(file_, path, expected, got);
  }
  Status ErrMsg(const std::string& path, const std::string& what) const {
    return InvalidArgument(file_ + ": at " + path + ": " + what);
  }

  // A JSON path, or a function that makes it: the paths of a program's
  // elements ("$.orchestration[7].args[1]") are spelt out for an error
  // message only, not for each of a large program's elements.
  static const std::string& PathOf(const std::string& path) { return path; }
  template <typename MakePath>
  requires std::is_invocable_r_v<std::string, const MakePath&>
  static std::string PathOf(const MakePath& make) { return make(); }

  template <typename Path>
  Status CheckKeys(const Json& obj, const Path& path,
                   std::initializer_list<const char*> allowed) const {
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      const std::string& key = it.key();
      if (std::any_of(allowed.begin(), allowed.end(), [&](const char* a) { return key == a; }))
        continue;
      std::string list;
      for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      return ErrMsg(PathOf(path) + "." + key,
                    "unknown key \"" + key + "\"; expected one of: " + list);
    }
    return Status::Ok();
  }

  template <typename Path>
  Result<int64_t> Int(const Json& j, const Path& path, int64_t lo, int64_t hi) const {
    if (!j.is_number_integer())
      return Err(PathOf(path),
                 "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]", j);
    int64_t v = j.is_number_unsigned() && j.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)
                    ? INT64_MAX
                    : j.get<int64_t>();
    if (v < lo || v > hi)
      return Err(PathOf(path),
                 "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]", j);
    return v;
  }

  Result<std::string> String(const Json& obj, const std::string& key, const std::string& path,
                             const std::string& expected) const {
    auto it = obj.find(key);
    if (it == obj.end()) return ErrMsg(path, "missing key \"" + key + "\" (" + expected + ")");
    if (!it->is_string() || it->get_ref<const std::string&>().empty())
      return Err(path + "." + key, expected, *it);
    return it->get_ref<const std::string&>();
  }

  Result<DType> ParseDTypeAt(const Json& obj, const std::string& path) const {
    DFX_ASSIGN_OR_RETURN(std::string name, String(obj, "dtype", path, "a dtype name"));
    auto t = ParseDType(name);
    if (!t) return Err(path + ".dtype", "a dtype (one of " + DTypeNameList() + ")", obj["dtype"]);
    return *t;
  }

  Status ParseKernels(const Json& j, Program* p) {
    if (!j.contains("kernels") || !j["kernels"].is_array() || j["kernels"].empty())
      return Err("$.kernels", "a non-empty array of kernels", j.value("kernels", Json()));
    std::set<int> func_ids;
    for (size_t i = 0; i < j["kernels"].size(); ++i) {
      const Json& k = j["kernels"][i];
      std::string path = "$.kernels[" + std::to_string(i) + "]";
      if (!k.is_object()) return Err(path, "a kernel object", k);
      DFX_RETURN_IF_ERROR(CheckKeys(k, path, {"func_id", "name", "core_type", "op", "params"}));
      Kernel kernel;
      if (!k.contains("func_id")) return ErrMsg(path, "missing key \"func_id\" (an integer >= 0)");
      DFX_ASSIGN_OR_RETURN(int64_t fid, Int(k["func_id"], path + ".func_id", 0, 65534));
      kernel.func_id = static_cast<int>(fid);
      if (!func_ids.insert(kernel.func_id).second)
        return Err(path + ".func_id", "a func_id not used by another kernel", k["func_id"]);
      DFX_ASSIGN_OR_RETURN(kernel.name, String(k, "name", path, "a non-empty kernel name"));
      if (kernel_index_.count(kernel.name))
        return Err(path + ".name", "a kernel name not used by another kernel", k["name"]);
      DFX_ASSIGN_OR_RETURN(std::string core, String(k, "core_type", path, "\"aic\" or \"aiv\""));
      if (core == "aic") {
        kernel.core_type = CoreType::kAic;
      } else if (core == "aiv") {
        kernel.core_type = CoreType::kAiv;
      } else {
        return Err(path + ".core_type", "\"aic\" or \"aiv\"", k["core_type"]);
      }
      std::string op_list;
      for (KernelOp op : kAllOps)
        op_list += (op_list.empty() ? "" : ", ") + std::string(KernelOpName(op));
      DFX_ASSIGN_OR_RETURN(std::string op, String(k, "op", path, "an op (one of " + op_list + ")"));
      bool found = false;
      for (KernelOp o : kAllOps) {
        if (op == KernelOpName(o)) {
          kernel.op = o;
          found = true;
        }
      }
      if (!found) return Err(path + ".op", "an op (one of " + op_list + ")", k["op"]);
      Json params = k.value("params", Json::object());
      if (!params.is_object()) return Err(path + ".params", "an object", params);
      std::string ppath = path + ".params";
      switch (kernel.op) {
        case KernelOp::kBusy:
          DFX_RETURN_IF_ERROR(CheckKeys(params, ppath, {"duration_us"}));
          if (!params.contains("duration_us") || !params["duration_us"].is_number() ||
              params["duration_us"].get<double>() < 0 || params["duration_us"].get<double>() > 1e7)
            return Err(ppath + ".duration_us", "a number of microseconds in [0, 1e7]",
                       params.value("duration_us", Json()));
          kernel.duration_us = params["duration_us"].get<double>();
          break;
        case KernelOp::kRmsnorm:
          DFX_RETURN_IF_ERROR(CheckKeys(params, ppath, {"eps"}));
          if (params.contains("eps")) {
            if (!params["eps"].is_number() || params["eps"].get<double>() <= 0)
              return Err(ppath + ".eps", "a positive number", params["eps"]);
            kernel.eps = params["eps"].get<double>();
          }
          break;
        case KernelOp::kFail:
          DFX_RETURN_IF_ERROR(CheckKeys(params, ppath, {"message"}));
          kernel.message = "kernel failed";
          if (params.contains("message")) {
            if (!params["message"].is_string())
              return Err(ppath + ".message", "a string", params["message"]);
            kernel.message = params["message"].get<std::string>();
          }
          break;
        default:
          DFX_RETURN_IF_ERROR(CheckKeys(params, ppath, {}));
      }
      kernel_index_[kernel.name] = static_cast<int>(p->kernels.size());
      p->kernels.push_back(std::move(kernel));
    }
    return Status::Ok();
  }

  Result<std::vector<uint32_t>> ParseShape(const Json& obj, const std::string& path) const {
    if (!obj.contains("shape"))
      return ErrMsg(path, "missing key \"shape\" (an array of 1..5 positive integers)");
    const Json& s = obj["shape"];
    if (!s.is_array() || s.empty() || s.size() > 5)
      return Err(path + ".shape", "an array of 1..5 positive integers", s);
    std::vector<uint32_t> shape;
    uint64_t numel = 1;
    shape.reserve(s.size());
    for (size_t d = 0; d < s.size(); ++d) {
      auto dim_path = [&] { return path + ".shape[" + std::to_string(d) + "]"; };
      DFX_ASSIGN_OR_RETURN(int64_t v, Int(s[d], dim_path, 1, 1 << 24));
      shape.push_back(static_cast<uint32_t>(v));
      numel *= static_cast<uint64_t>(v);
    }
    if (numel > (1ull << 28)) return Err(path + ".shape", "at most 2^28 elements per tensor", s);
    return shape;
  }

  Status ParseInit(const Json& t, const std::string& path, TensorDecl* decl) const {
    if (!t.contains("init")) return Status::Ok();
    const Json& in = t["init"];
    auto ipath = [&] { return path + ".init"; };
    const char* expected =
        "\"zeros\", \"ones\", {\"range\": start or [start, step]}, {\"random\": seed} or an array "
        "of numel numbers";
    if (in.is_string()) {
      const std::string& name = in.get_ref<const std::string&>();
      if (name == "zeros") {
        decl->init.kind = InitKind::kZeros;
      } else if (name == "ones") {
        decl->init.kind = InitKind::kOnes;
      } else {
        return Err(ipath(), expected, in);
      }
    } else if (in.is_object() && in.size() == 1 && in.contains("range")) {
      decl->init.kind = InitKind::kRange;
      const Json& r = in["range"];
      if (r.is_number()) {
        decl->init.range_start = r.get<double>();
      } else if (r.is_array() && r.size() == 2 && r[0].is_number() && r[1].is_number()) {
        decl->init.range_start = r[0].get<double>();
        decl->init.range_step = r[1].get<double>();
      } else {
        return Err(ipath() + ".range", "a number or [start, step]", r);
      }
    } else if (in.is_object() && in.size() == 1 && in.contains("random")) {
      decl->init.kind = InitKind::kRandom;
      if (!in["random"].is_number_unsigned() &&
          !(in["random"].is_number_integer() && in["random"].get<int64_t>() >= 0))
        return Err(ipath() + ".random", "a non-negative integer seed", in["random"]);
      decl->init.seed = in["random"].get<uint64_t>();
    } else if (in.is_array()) {
      decl->init.kind = InitKind::kValues;
      if (in.size() != decl->Numel())
        return Err(ipath(),
                   "an array of exactly " + std::to_string(decl->Numel()) +
                       " numbers (the numel of shape " + ShapeString(decl->shape) + ")",
                   in);
      for (size_t i = 0; i < in.size(); ++i) {
        if (!in[i].is_number() && !in[i].is_boolean())
          return Err(ipath() + "[" + std::to_string(i) + "]", "a number", in[i]);
        decl->init.values.push_back(in[i].is_boolean() ? (in[i].get<bool>() ? 1.0 : 0.0)
                                                       : in[i].get<double>());
      }
    } else {
      return Err(ipath(), expected, in);
    }
    return Status::Ok();
  }

  Status ParseTensors(const Json& j, Program* p) {
    if (!j.contains("tensors") || !j["tensors"].is_array())
      return Err("$.tensors", "an array of tensors", j.value("tensors", Json()));
    for (size_t i = 0; i < j["tensors"].size(); ++i) {
      const Json& t = j["tensors"][i];
      std::string path = "$.tensors[" + std::to_string(i) + "]";
      if (!t.is_object()) return Err(path, "a tensor object", t);
      TensorDecl decl;
      DFX_ASSIGN_OR_RETURN(decl.name, String(t, "name", path, "a non-empty tensor name"));
      if (tensor_index_.count(decl.name))
        return Err(path + ".name", "a tensor name not used by another tensor", t["name"]);
      if (t.contains("view_of")) {
        DFX_RETURN_IF_ERROR(CheckKeys(t, path, {"name", "view_of", "shape", "offset"}));
        DFX_ASSIGN_OR_RETURN(std::string parent, String(t, "view_of", path, "a tensor name"));
        auto it = tensor_index_.find(parent);
        if (it == tensor_index_.end())
          return Err(path + ".view_of", "the name of a tensor declared earlier", t["view_of"]);
        const TensorDecl& pd = p->tensors[it->second];
        if (pd.view_of >= 0)
          return Err(path + ".view_of", "a base tensor (views of views are not supported)",
                     t["view_of"]);
        decl.view_of = it->second;
        decl.dtype = pd.dtype;
        DFX_ASSIGN_OR_RETURN(decl.shape, ParseShape(t, path));
        if (t.contains("offset")) {
          DFX_ASSIGN_OR_RETURN(int64_t off, Int(t["offset"], path + ".offset", 0, 1ll << 40));
          decl.offset = static_cast<uint64_t>(off);
        }
        if (decl.offset + decl.Numel() > pd.Numel())
          return ErrMsg(path, "view of " + std::to_string(decl.Numel()) + " elements at offset " +
                                  std::to_string(decl.offset) + " does not fit in \"" + parent +
                                  "\" (" + std::to_string(pd.Numel()) + " elements); expected " +
                                  "offset + numel <= " + std::to_string(pd.Numel()));
      } else {
        DFX_RETURN_IF_ERROR(CheckKeys(t, path, {"name", "shape", "dtype", "init", "resident"}));
        DFX_ASSIGN_OR_RETURN(decl.shape, ParseShape(t, path));
        DFX_ASSIGN_OR_RETURN(decl.dtype, ParseDTypeAt(t, path));
        DFX_RETURN_IF_ERROR(ParseInit(t, path, &decl));
        if (t.contains("resident")) {
          if (!t["resident"].is_boolean())
            return Err(path + ".resident", "true or false (device-resident state)", t["resident"]);
          decl.resident = t["resident"].get<bool>();
        }
      }
      tensor_index_[decl.name] = static_cast<int>(p->tensors.size());
      p->tensors.push_back(std::move(decl));
    }
    return Status::Ok();
  }

  std::string TensorNames(const Program& p) const {
    std::string s;
    for (size_t i = 0; i < p.tensors.size() && i < 8; ++i) s += (i ? ", " : "") + p.tensors[i].name;
    if (p.tensors.size() > 8) s += ", ...";
    return s;
  }

  template <typename Path>
  Result<int> TensorRef(const Json& v, const Path& path, const Program& p) const {
    if (v.is_string()) {
      auto it = tensor_index_.find(v.get_ref<const std::string&>());
      if (it != tensor_index_.end()) return it->second;
    }
    return Err(PathOf(path), "the name of a declared tensor (one of " + TensorNames(p) + ")", v);
  }

  Status ParseBody(const Json& body, const std::string& path, Program* p,
                   std::vector<Statement>* out) {
    for (size_t i = 0; i < body.size(); ++i) {
      std::string spath = path + "[" + std::to_string(i) + "]";
      const Json& s = body[i];
      if (!s.is_object())
        return Err(spath,
                   "a statement object ({\"submit\"...}, {\"dump_tag\"...} or {\"scope\"...})", s);
      Statement st;
      st.json_path = spath;
      if (s.contains("submit")) {
        st.kind = Statement::Kind::kSubmit;
        DFX_RETURN_IF_ERROR(ParseSubmit(s, spath, p, &st.submit));
      } else if (s.contains("dump_tag")) {
        st.kind = Statement::Kind::kDumpTag;
        DFX_RETURN_IF_ERROR(CheckKeys(s, spath, {"dump_tag"}));
        DFX_ASSIGN_OR_RETURN(st.tag_tensor, TensorRef(s["dump_tag"], spath + ".dump_tag", *p));
      } else if (s.contains("scope")) {
        st.kind = Statement::Kind::kScope;
        DFX_RETURN_IF_ERROR(CheckKeys(s, spath, {"scope", "manual", "body"}));
        DFX_ASSIGN_OR_RETURN(st.site, String(s, "scope", spath, "a non-empty scope site name"));
        if (s.contains("manual")) {
          if (!s["manual"].is_boolean())
            return Err(spath + ".manual", "true or false", s["manual"]);
          st.manual = s["manual"].get<bool>();
        }
        if (!s.contains("body") || !s["body"].is_array())
          return Err(spath + ".body", "an array of statements", s.value("body", Json()));
        if (++depth_ > 64)
          return ErrMsg(spath, "scopes nested deeper than 64; expected at most 64");
        DFX_RETURN_IF_ERROR(ParseBody(s["body"], spath + ".body", p, &st.body));
        --depth_;
      } else {
        return Err(spath, "a statement with one of the keys submit, dump_tag, scope", s);
      }
      out->push_back(std::move(st));
    }
    return Status::Ok();
  }

  Status ParseSubmit(const Json& s, const std::string& path, Program* p, Submit* sub) {
    DFX_RETURN_IF_ERROR(
        CheckKeys(s, path, {"submit", "args", "scalars", "block_num", "dumps", "id", "deps"}));
    const Json& kernel_name = s["submit"];
    auto kernel_it = kernel_name.is_string()
                         ? kernel_index_.find(kernel_name.get_ref<const std::string&>())
                         : kernel_index_.end();
    if (kernel_it == kernel_index_.end()) {
      std::string names;
      for (const auto& k : p->kernels) names += (names.empty() ? "" : ", ") + k.name;
      return Err(path + ".submit", "the name of a declared kernel (one of " + names + ")",
                 kernel_name);
    }
    sub->kernel = kernel_it->second;
    const Kernel& kernel = p->kernels[sub->kernel];
    if (!s.contains("args") || !s["args"].is_array() || s["args"].size() > 32)
      return Err(path + ".args", "an array of at most 32 tensor arguments",
                 s.value("args", Json()));
    const Json& args = s["args"];
    sub->args.reserve(args.size());
    for (size_t a = 0; a < args.size(); ++a) {
      const Json& arg = args[a];
      auto apath = [&] { return path + ".args[" + std::to_string(a) + "]"; };
      if (!arg.is_object())
        return Err(apath(), "{\"tensor\": name, \"type\": INPUT|OUTPUT|INOUT|OUTPUT_EXISTING}",
                   arg);
      DFX_RETURN_IF_ERROR(CheckKeys(arg, apath, {"tensor", "type"}));
      SubmitArg sa;
      auto tensor = arg.find("tensor");
      if (tensor == arg.end()) return ErrMsg(apath(), "missing key \"tensor\" (a tensor name)");
      auto tensor_path = [&] { return apath() + ".tensor"; };
      DFX_ASSIGN_OR_RETURN(sa.tensor, TensorRef(*tensor, tensor_path, *p));
      const char* types = "one of INPUT, OUTPUT, INOUT, OUTPUT_EXISTING";
      auto type = arg.find("type");
      if (type == arg.end() || !type->is_string())
        return Err(apath() + ".type", types, arg.value("type", Json()));
      const std::optional<ArgType> arg_type = ArgTypeNamed(type->get_ref<const std::string&>());
      if (!arg_type) return Err(apath() + ".type", types, *type);
      sa.type = *arg_type;
      if (sa.type == ArgType::kOutput && p->tensors[sa.tensor].view_of >= 0)
        return Err(apath() + ".tensor",
                   "a base tensor for an OUTPUT (a view cannot be rebound; use OUTPUT_EXISTING)",
                   *tensor);
      sub->args.push_back(sa);
    }
    if (s.contains("scalars")) {
      const Json& sc = s["scalars"];
      if (!sc.is_array() || sc.size() > 16)
        return Err(path + ".scalars", "an array of at most 16 scalars", sc);
      for (size_t i = 0; i < sc.size(); ++i) {
        std::string cpath = path + ".scalars[" + std::to_string(i) + "]";
        if (!sc[i].is_object()) return Err(cpath, "{\"dtype\": ..., \"value\": number}", sc[i]);
        DFX_RETURN_IF_ERROR(CheckKeys(sc[i], cpath, {"dtype", "value"}));
        Scalar scalar;
        DFX_ASSIGN_OR_RETURN(scalar.dtype, ParseDTypeAt(sc[i], cpath));
        if (!sc[i].contains("value") ||
            !(sc[i]["value"].is_number() || sc[i]["value"].is_boolean()))
          return Err(cpath + ".value", "a number", sc[i].value("value", Json()));
        scalar.value = sc[i]["value"].is_boolean() ? (sc[i]["value"].get<bool>() ? 1 : 0)
                                                   : sc[i]["value"].get<double>();
        sub->scalars.push_back(scalar);
      }
    }
    if (s.contains("block_num")) {
      DFX_ASSIGN_OR_RETURN(int64_t bn, Int(s["block_num"], path + ".block_num", 1, 4096));
      sub->block_num = static_cast<int>(bn);
    }
    if (s.contains("dumps")) {
      const Json& d = s["dumps"];
      if (!d.is_array())
        return Err(path + ".dumps", "an array of tensor names passed to this submit", d);
      for (size_t i = 0; i < d.size(); ++i) {
        std::string dpath = path + ".dumps[" + std::to_string(i) + "]";
        DFX_ASSIGN_OR_RETURN(int t, TensorRef(d[i], dpath, *p));
        if (!MarkDumps(sub, t)) return Err(dpath, "a tensor passed in this submit's args", d[i]);
      }
    }
    if (s.contains("id")) {
      if (!s["id"].is_string() || s["id"].get<std::string>().empty())
        return Err(path + ".id", "a non-empty label string", s["id"]);
      sub->label = s["id"].get<std::string>();
      if (labels_.count(sub->label))
        return Err(path + ".id", "a label not used by an earlier submit", s["id"]);
    }
    if (s.contains("deps")) {
      const Json& d = s["deps"];
      if (!d.is_array()) return Err(path + ".deps", "an array of labels of earlier submits", d);
      for (size_t i = 0; i < d.size(); ++i) {
        std::string dpath = path + ".deps[" + std::to_string(i) + "]";
        if (!d[i].is_string() || !labels_.count(d[i].get<std::string>()))
          return Err(dpath, "the \"id\" label of an earlier submit", d[i]);
        sub->deps.push_back(labels_[d[i].get<std::string>()]);
      }
    }
    DFX_RETURN_IF_ERROR(CheckOp(kernel, *sub, *p, path, &s));
    if (!sub->label.empty()) labels_[sub->label] = submit_count_;
    ++submit_count_;
    return Status::Ok();
  }

  // Shape rules per op. Inputs are INPUT/INOUT args, outputs OUTPUT/
  // OUTPUT_EXISTING/INOUT args, each in argument order.
  // `s` is the submit's JSON, for the value an error message quotes; the
  // text reader (FastBody) has none and only asks whether the op is right.
  Status CheckOp(const Kernel& k, const Submit& sub, const Program& p, const std::string& path,
                 const Json* s) const {
    std::vector<int> ins, outs;  // arg indices
    for (size_t a = 0; a < sub.args.size(); ++a) {
      ArgType t = sub.args[a].type;
      if (t == ArgType::kInput || t == ArgType::kInout) ins.push_back(static_cast<int>(a));
      if (t != ArgType::kInput) outs.push_back(static_cast<int>(a));
    }
    auto shape = [&](int a) -> const std::vector<uint32_t>& {
      return p.tensors[sub.args[a].tensor].shape;
    };
    auto apath = [&](int a) { return path + ".args[" + std::to_string(a) + "].tensor"; };
    auto arity = [&](size_t nin_lo, size_t nin_hi, const std::string& form) -> Status {
      if (ins.size() < nin_lo || ins.size() > nin_hi || outs.size() != 1)
        return ErrMsg(path + ".args", std::string("kernel \"") + k.name + "\" (op " +
                                          KernelOpName(k.op) + ") expects " + form + ", got " +
                                          std::to_string(ins.size()) + " input(s) and " +
                                          std::to_string(outs.size()) + " output(s)");
      return Status::Ok();
    };
    auto mismatch = [&](int a, const std::string& expected) {
      if (s == nullptr) return ErrMsg(apath(a), "expected " + expected);
      return Err(apath(a), expected, (*s)["args"][a]["tensor"]);
    };
    switch (k.op) {
      case KernelOp::kAdd:
      case KernelOp::kMul: {
        DFX_RETURN_IF_ERROR(arity(1, 2, "1 or 2 inputs (INPUT/INOUT) and 1 output"));
        if (ins.size() == 1 && sub.scalars.size() != 1)
          return ErrMsg(path + ".scalars", std::string("op ") + KernelOpName(k.op) +
                                               " with one tensor input expects exactly 1 scalar");
        for (int a : ins)
          if (shape(a) != shape(outs[0]))
            return mismatch(a, "a tensor of the output's shape " + ShapeString(shape(outs[0])) +
                                   " (elementwise), but it has shape " + ShapeString(shape(a)));
        break;
      }
      case KernelOp::kCopy:
        DFX_RETURN_IF_ERROR(arity(1, 1, "1 input and 1 output"));
        if (p.tensors[sub.args[ins[0]].tensor].Numel() !=
            p.tensors[sub.args[outs[0]].tensor].Numel())
          return mismatch(outs[0], "a tensor with as many elements as the input " +
                                       ShapeString(shape(ins[0])) + ", but it has shape " +
                                       ShapeString(shape(outs[0])));
        break;
      case KernelOp::kSoftmax:
        DFX_RETURN_IF_ERROR(arity(1, 1, "1 input and 1 output"));
        if (shape(ins[0]) != shape(outs[0]))
          return mismatch(outs[0], "the input's shape " + ShapeString(shape(ins[0])) +
                                       ", but it has shape " + ShapeString(shape(outs[0])));
        break;
      case KernelOp::kRmsnorm: {
        DFX_RETURN_IF_ERROR(arity(1, 2, "x, an optional gamma [n] and 1 output"));
        if (shape(ins[0]) != shape(outs[0]))
          return mismatch(outs[0], "the input's shape " + ShapeString(shape(ins[0])) +
                                       ", but it has shape " + ShapeString(shape(outs[0])));
        if (ins.size() == 2) {
          std::vector<uint32_t> g{shape(ins[0]).back()};
          if (shape(ins[1]) != g)
            return mismatch(ins[1], "a gamma of shape " + ShapeString(g) + ", but it has shape " +
                                        ShapeString(shape(ins[1])));
        }
        break;
      }
      case KernelOp::kReduceSum: {
        DFX_RETURN_IF_ERROR(arity(1, 1, "1 input and 1 output"));
        const auto& x = shape(ins[0]);
        uint64_t rows = p.tensors[sub.args[ins[0]].tensor].Numel() / x.back();
        if (p.tensors[sub.args[outs[0]].tensor].Numel() != rows)
          return mismatch(outs[0], "a tensor of " + std::to_string(rows) + " elements (input " +
                                       ShapeString(x) +
                                       " reduced over its last dimension), but it has shape " +
                                       ShapeString(shape(outs[0])));
        break;
      }
      case KernelOp::kMatmul: {
        DFX_RETURN_IF_ERROR(arity(2, 2, "a [m,k], b [k,n] and 1 output [m,n]"));
        const auto& a = shape(ins[0]);
        const auto& b = shape(ins[1]);
        const auto& c = shape(outs[0]);
        if (a.size() != 2)
          return mismatch(ins[0], "a 2-D [m,k] tensor, but it has shape " + ShapeString(a));
        if (b.size() != 2 || b[0] != a[1])
          return mismatch(ins[1], "a 2-D [k,n] tensor with k=" + std::to_string(a[1]) +
                                      ", but it has shape " + ShapeString(b));
        std::vector<uint32_t> want{a[0], b[1]};
        if (c != want)
          return mismatch(outs[0], "an output of shape " + ShapeString(want) +
                                       " ([m,k]x[k,n]->[m,n]), but it has shape " + ShapeString(c));
        break;
      }
      case KernelOp::kBusy:
      case KernelOp::kFail:
        break;
    }
    return Status::Ok();
  }

  std::string file_;
  // Looked up by std::string_view too (the text reader), without a copy.
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using NameIndex = std::unordered_map<std::string, int, NameHash, std::equal_to<>>;
  NameIndex kernel_index_;
  NameIndex tensor_index_;
  NameIndex labels_;  // label -> submit ordinal
  int submit_count_ = 0;
  int depth_ = 0;
};

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
  Parser parser(origin);
  return parser.Parse(json);
}

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
  DFX_ASSIGN_OR_RETURN(std::string text, ReadJsonText(path));  // bounded before parsing
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
