#include "common/json.h"

#include "common/file_util.h"

namespace dfx {

Result<Json> ParseJson(const std::string& text, const std::string& origin) {
  try {
    return Json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // e.what() is "[json.exception.parse_error.101] parse error at line 3, column 5: ..."
    std::string what = e.what();
    auto pos = what.find("] ");
    if (pos != std::string::npos) what = what.substr(pos + 2);
    return InvalidArgument(origin + ": not valid JSON: " + what);
  }
}

Result<Json> ReadJsonFile(const std::filesystem::path& path) {
  DFX_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseJson(text, path.string());
}

std::string DescribeJson(const Json& v) {
  std::string dumped = v.dump();
  if (dumped.size() > 40) dumped = dumped.substr(0, 37) + "...";
  return std::string(v.type_name()) + " " + dumped;
}

Status JsonError(const std::string& file, const std::string& json_path,
                 const std::string& expected, const Json& got) {
  return InvalidArgument(file + ": at " + json_path + ": expected " + expected + ", got " +
                         DescribeJson(got));
}

Status WriteJsonFileAtomic(const std::filesystem::path& path, const Json& value, int indent,
                           bool trailing_newline) {
  std::string text = value.dump(indent);
  if (trailing_newline) text.push_back('\n');
  return WriteFileAtomic(path, text);
}

}  // namespace dfx
