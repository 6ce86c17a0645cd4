#include "common/json.h"

#include <fmt/format.h>

#include <system_error>
#include <vector>

#include "common/file_util.h"
#include "common/input_file.h"

namespace dfx {

namespace {

// One open container of the depth scan.
struct Level {
  bool object = false;
  size_t index = 0;         // arrays: the element being read
  std::string key;          // objects: the last key (at most kMaxKeyChars)
  bool expect_key = false;  // objects: the next string is a key
};
constexpr size_t kMaxKeyChars = 40;

void AppendLevel(std::string* path, const Level& l) {
  // Appended piece by piece: gcc 12 warns (-Wrestrict, a false positive)
  // about the temporary of "[" + std::to_string(...).
  if (!l.object) {
    *path += '[';
    *path += std::to_string(l.index);
    *path += ']';
  } else if (l.key.empty()) {
    *path += ".?";
  } else {
    *path += '.';
    *path += l.key;
  }
}

// "$.a[0][0][0]<249 more>[0][0][0][1]": the first and last levels of a deep path.
std::string PathOf(const std::vector<Level>& levels) {
  constexpr size_t kEnds = 4;
  std::string path = "$";
  for (size_t i = 0; i < levels.size(); ++i) {
    if (levels.size() > 2 * kEnds + 1 && i == kEnds) {
      path += fmt::format("<{} more>", levels.size() - 2 * kEnds);
      i = levels.size() - kEnds - 1;
      continue;
    }
    AppendLevel(&path, levels[i]);
  }
  return path;
}

// Appends at most `budget` characters of `v`'s compact JSON to `out`,
// visiting only what it prints (depth and breadth bounded by the budget).
void AppendBounded(const Json& v, size_t budget, std::string* out) {
  const size_t limit = out->size() + budget;
  auto room = [&] { return out->size() < limit; };
  if (v.is_array() || v.is_object()) {
    out->push_back(v.is_array() ? '[' : '{');
    bool first = true;
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!room()) {
        *out += "...";
        return;
      }
      if (!first) out->push_back(',');
      first = false;
      if (v.is_object()) {
        const std::string& key = it.key();
        *out += Json(key.size() > budget ? key.substr(0, budget) : key).dump() + ":";
      }
      if (room()) AppendBounded(it.value(), limit - out->size(), out);
    }
    out->push_back(v.is_array() ? ']' : '}');
    return;
  }
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s.size() > budget) {
      *out += Json(s.substr(0, budget)).dump();
      *out += "...";
      return;
    }
  }
  *out += v.dump();  // a scalar (or a short string)
}

}  // namespace

Status CheckJsonDepth(std::string_view text, const std::string& origin, int max_depth) {
  std::vector<Level> levels;
  bool in_string = false;
  bool escaped = false;
  bool capturing_key = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
        capturing_key = false;
        continue;
      }
      if (capturing_key && levels.back().key.size() < kMaxKeyChars) levels.back().key.push_back(c);
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        if (!levels.empty() && levels.back().object && levels.back().expect_key) {
          capturing_key = true;
          levels.back().key.clear();
          levels.back().expect_key = false;
        }
        break;
      case '{':
      case '[':
        if (static_cast<int>(levels.size()) >= max_depth) {
          return InvalidArgument(fmt::format(
              "{}: at {} (depth {}): JSON nested deeper than {} levels; no real document does",
              origin, PathOf(levels), levels.size() + 1, max_depth));
        }
        levels.push_back(Level{c == '{', 0, {}, c == '{'});
        break;
      case '}':
      case ']':
        if (!levels.empty()) levels.pop_back();
        break;
      case ',':
        if (!levels.empty()) {
          if (levels.back().object) {
            levels.back().expect_key = true;
          } else {
            ++levels.back().index;
          }
        }
        break;
      default:
        break;
    }
  }
  return Status::Ok();
}

Result<Json> ParseJson(const std::string& text, const std::string& origin) {
  DFX_RETURN_IF_ERROR(CheckJsonDepth(text, origin));
  try {
    return Json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    // e.what() is "[json.exception.parse_error.101] parse error at line 3, column 5: ...",
    // or out_of_range.406 for a number too large for a double ("1e400").
    std::string what = e.what();
    if (what.size() > 200) what = what.substr(0, 200) + "...";
    auto pos = what.find("] ");
    if (pos != std::string::npos) what = what.substr(pos + 2);
    return InvalidArgument(origin + ": not valid JSON: " + what);
  }
}

Result<std::string> ReadJsonText(const std::filesystem::path& path, uint64_t max_bytes) {
  return ReadInputFile(path, max_bytes);
}

Result<Json> ReadJsonFile(const std::filesystem::path& path, uint64_t max_bytes) {
  DFX_ASSIGN_OR_RETURN(std::string text, ReadJsonText(path, max_bytes));
  return ParseJson(text, path.string());
}

std::string DescribeJson(const Json& v) {
  std::string shown;
  AppendBounded(v, 40, &shown);
  if (shown.size() > 44) shown = shown.substr(0, 40) + "...";
  return std::string(v.type_name()) + " " + shown;
}

Status JsonError(const std::string& file, const std::string& json_path, const std::string& expected,
                 const Json& got) {
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
