// The program parser shared by the loader's two readers (device/
// program_loader.h): Parser reads a program's JSON document with every check
// and error message (device/program_parser.cc), and reads an orchestration
// straight from its text in the usual statement forms (FastBody,
// device/program_fast_path.cc). Internal to the device module; one Parser
// per program, used by one thread.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "common/json.h"
#include "common/status.h"
#include "device/json_text_cursor.h"
#include "device/program.h"

namespace dfx::device::parsing {

// "[2,3]": a shape as error messages spell it.
std::string ShapeString(const std::vector<uint32_t>& shape);

// The argument type named `name` ("INPUT", ...), if any.
inline std::optional<ArgType> ArgTypeNamed(std::string_view name) {
  return kArgTypeText.Parse(name);
}

// Marks for dumping every argument of `sub` that passes `tensor`; false when
// none does.
bool MarkDumps(Submit* sub, int tensor);

// Parses one program; `file_` names the source in every error.
class Parser {
 public:
  explicit Parser(std::string file) : file_(std::move(file)) {}

  // `body`, when given, reads the orchestration instead of j's (the text
  // reader; j's orchestration is then an empty array).
  Result<Program> Parse(const Json& j, const std::function<Status(Program*)>& body = nullptr);

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
                std::vector<Statement>* out, int depth);

 private:
  template <typename Map>
  static const int* Find(const Map& map, std::string_view name) {
    auto it = map.find(name);
    return it == map.end() ? nullptr : &it->second;
  }

  // One statement object at `*at` (see FastBody).
  bool FastStatement(std::string_view text, size_t* at, Program* p, Statement* st, int depth);

  // A submit's "args": at most 32 {"tensor": name, "type": name} objects.
  bool FastArgs(TextCursor& c, const Program& p, std::vector<SubmitArg>* out) const;

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
                   std::initializer_list<const char*> allowed) const;

  template <typename Path>
  Result<int64_t> Int(const Json& j, const Path& path, int64_t lo, int64_t hi) const;

  Result<std::string> String(const Json& obj, const std::string& key, const std::string& path,
                             const std::string& expected) const;

  Result<DType> ParseDTypeAt(const Json& obj, const std::string& path) const;

  Status ParseKernels(const Json& j, Program* p);

  Result<std::vector<uint32_t>> ParseShape(const Json& obj, const std::string& path) const;

  Status ParseInit(const Json& t, const std::string& path, TensorDecl* decl) const;

  Status ParseTensors(const Json& j, Program* p);

  std::string TensorNames(const Program& p) const;

  template <typename Path>
  Result<int> TensorRef(const Json& v, const Path& path, const Program& p) const;

  Status ParseBody(const Json& body, const std::string& path, Program* p,
                   std::vector<Statement>* out);

  Status ParseSubmit(const Json& s, const std::string& path, Program* p, Submit* sub);

  // Shape rules per op. Inputs are INPUT/INOUT args, outputs OUTPUT/
  // OUTPUT_EXISTING/INOUT args, each in argument order.
  // `s` is the submit's JSON, for the value an error message quotes; the
  // text reader (FastBody) has none and only asks whether the op is right.
  Status CheckOp(const Kernel& k, const Submit& sub, const Program& p, const std::string& path,
                 const Json* s) const;

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

}  // namespace dfx::device::parsing
