#include "common/json_pull_reader.h"

#include <fmt/format.h>

#include <cstdlib>
#include <string_view>

#include "common/byte_scan.h"
#include "common/integer_cast.h"
#include "common/json_stream.h"

namespace dfx {

JsonPullReader::~JsonPullReader() {
  if (file_ != nullptr) std::fclose(file_);
}

Status JsonPullReader::Open(const std::filesystem::path& path) {
  path_ = path.string();
  file_ = std::fopen(path_.c_str(), "rb");
  if (file_ == nullptr) return NotFound("Input file not found: " + path_);
  buf_.resize(1 << 20);
  return Status::Ok();
}

Status JsonPullReader::OpenAt(const std::filesystem::path& path, uint64_t offset) {
  if (file_ != nullptr) std::fclose(file_);
  file_ = nullptr;
  pos_ = len_ = 0;
  consumed_ = 0;
  first_.clear();
  status_ = Status::Ok();
  DFX_RETURN_IF_ERROR(Open(path));
  if (offset > 0 && std::fseek(file_, static_cast<long>(offset), SEEK_SET) != 0) {
    return InvalidArgument(fmt::format("{}: cannot seek to byte {}", path_, offset));
  }
  consumed_ = offset;
  return Status::Ok();
}

bool JsonPullReader::SkipTo(uint64_t offset) {
  if (!ok()) return false;
  if (offset < bytes_read()) {
    return Fail(fmt::format("cannot skip back to byte {}", offset));
  }
  if (offset <= consumed_ + len_) {  // in the buffer
    pos_ = static_cast<size_t>(offset - consumed_);
    return true;
  }
  if (file_ == nullptr || std::fseek(file_, static_cast<long>(offset), SEEK_SET) != 0) {
    return Fail(fmt::format("cannot seek to byte {}", offset));
  }
  consumed_ = offset;
  pos_ = len_ = 0;
  return true;
}

bool JsonPullReader::Fail(const std::string& message) {
  if (status_.ok()) {
    status_ = InvalidArgument(fmt::format("{}: at byte {}: {}", path_, bytes_read(), message));
  }
  return false;
}

__attribute__((noinline)) bool JsonPullReader::Refill() {
  if (file_ == nullptr) return false;
  consumed_ += len_;
  len_ = std::fread(buf_.data(), 1, buf_.size(), file_);
  pos_ = 0;
  return len_ > 0;
}

// The three per-byte primitives take one compare on the common path; a
// refill is the rare, out-of-line case (they were a third of a conversion's
// profile when every byte paid for a call).
inline int JsonPullReader::PeekChar() {
  if (pos_ < len_) return static_cast<unsigned char>(buf_[pos_]);
  if (!Refill()) return -1;
  return static_cast<unsigned char>(buf_[pos_]);
}

inline int JsonPullReader::GetChar() {
  if (pos_ < len_) return static_cast<unsigned char>(buf_[pos_++]);
  if (!Refill()) return -1;
  return static_cast<unsigned char>(buf_[pos_++]);
}

inline void JsonPullReader::SkipSpace() {
  for (;;) {
    while (pos_ < len_) {
      const char c = buf_[pos_];
      if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return;
      ++pos_;
    }
    if (!Refill()) return;
  }
}

bool JsonPullReader::Expect(char c) {
  if (!ok()) return false;
  if (pos_ < len_ && buf_[pos_] == c) {  // compact JSON: the byte is next
    ++pos_;
    return true;
  }
  SkipSpace();
  int got = GetChar();
  if (got != c) {
    return Fail(fmt::format(
        "expected '{}', got {}", c,
        got < 0 ? std::string("end of file") : fmt::format("'{}'", static_cast<char>(got))));
  }
  return true;
}

JsonPullReader::Kind JsonPullReader::Peek() {
  if (!ok()) return Kind::kError;
  SkipSpace();
  switch (PeekChar()) {
    case '{':
      return Kind::kObject;
    case '[':
      return Kind::kArray;
    case '"':
      return Kind::kString;
    case 't':
    case 'f':
      return Kind::kBool;
    case 'n':
      return Kind::kNull;
    case -1:
      return Kind::kEnd;
    default:
      return Kind::kNumber;
  }
}

bool JsonPullReader::BeginContainer(char open) {
  if (!Expect(open)) return false;
  if (!EnterContainer()) return false;
  first_.push_back(1);
  return true;
}

// Skip, ReadJson and every reader recurse once per level: the depth is
// capped (common/json.h) before a hostile file can exhaust the stack.
bool JsonPullReader::EnterContainer() {
  if (first_.size() >= static_cast<size_t>(kMaxJsonDepth)) {
    return Fail(
        fmt::format("JSON nested deeper than {} levels; no real artifact does", kMaxJsonDepth));
  }
  return true;
}

bool JsonPullReader::NextMember(char close) {
  if (!ok()) return false;
  if (pos_ < len_ && !first_.back()) {  // compact JSON: ',' or `close` is next
    const char c = buf_[pos_];
    if (c == ',') {
      ++pos_;
      return true;
    }
    if (c == close) {
      ++pos_;
      first_.pop_back();
      return false;
    }
  }
  SkipSpace();
  if (PeekChar() == close) {
    ++pos_;
    first_.pop_back();
    return false;
  }
  if (!first_.back()) {
    if (!Expect(',')) return false;
  }
  first_.back() = 0;
  return true;
}

bool JsonPullReader::BeginObject() { return BeginContainer('{'); }

bool JsonPullReader::NextKey(std::string* key) {
  if (!NextMember('}')) return false;
  if (!ReadString(key)) return false;
  return Expect(':');
}

bool JsonPullReader::BeginArray() { return BeginContainer('['); }

bool JsonPullReader::NextElement() { return NextMember(']'); }

bool JsonPullReader::ReadNumber(JsonNumber* out) {
  if (!ok()) return false;
  SkipSpace();
  *out = JsonNumber{};
  {
    // Fast path: an integer of at most 19 digits (no u64 overflow) that ends
    // inside the buffer, parsed in place.
    const char* begin = buf_.data() + pos_;
    const char* end = buf_.data() + len_;
    const char* p = begin;
    const bool negative = p != end && *p == '-';
    if (negative) ++p;
    const char* digits = p;
    uint64_t mag = 0;
    while (p != end && *p >= '0' && *p <= '9' && p - digits < 19) {
      mag = mag * 10 + static_cast<uint64_t>(*p - '0');
      ++p;
    }
    if (p != digits && p != end && !(*p >= '0' && *p <= '9') && *p != '.' && *p != 'e' &&
        *p != 'E') {
      out->negative = negative;
      out->magnitude = mag;
      out->value = negative ? -static_cast<double>(mag) : static_cast<double>(mag);
      pos_ += static_cast<size_t>(p - begin);
      return true;
    }
  }
  char text[64];
  size_t n = 0;
  int c = PeekChar();
  if (c == '-') {
    out->negative = true;
    text[n++] = '-';
    ++pos_;
    c = PeekChar();
  }
  if (c < '0' || c > '9') {
    return Fail(c < 0 ? "expected a number, got end of file"
                      : fmt::format("expected a number, got '{}'", static_cast<char>(c)));
  }
  uint64_t mag = 0;
  bool overflow = false;
  while (c >= '0' && c <= '9') {
    uint64_t next = mag * 10 + static_cast<uint64_t>(c - '0');
    if (next / 10 != mag) overflow = true;
    mag = next;
    if (n < sizeof(text) - 1) text[n++] = static_cast<char>(c);
    ++pos_;
    c = PeekChar();
  }
  if (c == '.' || c == 'e' || c == 'E') {
    out->is_integer = false;
    while ((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
      if (n < sizeof(text) - 1) text[n++] = static_cast<char>(c);
      ++pos_;
      c = PeekChar();
    }
  }
  text[n] = '\0';
  if (out->is_integer && !overflow) {
    out->magnitude = mag;
    out->value = out->negative ? -static_cast<double>(mag) : static_cast<double>(mag);
  } else {
    out->is_integer = false;
    out->value = std::strtod(text, nullptr);
  }
  return true;
}

uint64_t JsonNumber::AsRowUint64() const {
  if (negative) return static_cast<uint64_t>(AsInt64());
  if (is_integer) return magnitude;
  return SaturatedInteger<uint64_t>(value);
}

// Rows of integers are most of a records file: the common case, compact or
// with spaces, is read here without a call per byte; anything else (other
// whitespace, a sign, a fraction, a row across the buffer's end, 20 digits)
// is read from the same position by the general path below.
bool JsonPullReader::ReadUint64Array(std::vector<uint64_t>* values) {
  values->clear();
  if (!ok()) return false;
  SkipSpace();
  if (pos_ < len_ && buf_[pos_] == '[' && first_.size() < static_cast<size_t>(kMaxJsonDepth)) {
    const char* p = buf_.data() + pos_ + 1;
    const char* const end = buf_.data() + len_;
    const auto spaces = [&p, end] {
      while (p != end && *p == ' ') ++p;
    };
    spaces();
    bool whole = false;
    if (p != end && *p == ']') {
      ++p;
      whole = true;
    }
    while (!whole) {
      const char* digits = p;
      uint64_t v = 0;
      while (p != end && *p >= '0' && *p <= '9' && p - digits < 19) {
        v = v * 10 + static_cast<uint64_t>(*p - '0');
        ++p;
      }
      if (p == digits) break;
      spaces();
      if (p == end || (*p != ',' && *p != ']')) break;
      values->push_back(v);
      whole = *p++ == ']';
      if (!whole) spaces();
    }
    if (whole) {
      pos_ = static_cast<size_t>(p - buf_.data());
      return true;
    }
    values->clear();
  }
  if (!BeginArray()) return false;
  JsonNumber n;
  while (NextElement()) {
    if (!ReadNumber(&n)) return false;
    values->push_back(n.AsRowUint64());
  }
  return ok();
}

// The end of the run of bytes in [p, end) that are neither '"' nor '\\':
// eight bytes at a time, then byte by byte.
static const char* PlainRunEnd(const char* p, const char* end) {
  for (; end - p >= 8; p += 8) {
    const uint64_t hit = byte_scan::QuoteOrBackslash(byte_scan::Load(p));
    if (hit != 0) return p + byte_scan::FirstFlagged(hit);
  }
  while (p != end && *p != '"' && *p != '\\') ++p;
  return p;
}

bool JsonPullReader::ReadString(std::string* out) {
  if (!Expect('"')) return false;
  out->clear();
  for (;;) {
    // The run of plain characters left in the buffer is appended at once:
    // strings are most of what an artifact holds, and a byte at a time
    // through GetChar was the readers' hottest loop.
    const char* begin = buf_.data() + pos_;
    const char* end = buf_.data() + len_;
    const char* p = PlainRunEnd(begin, end);
    out->append(begin, static_cast<size_t>(p - begin));
    pos_ += static_cast<size_t>(p - begin);
    if (p == end) {
      if (!Refill()) return Fail("unterminated string");
      continue;
    }
    ++pos_;
    if (*p == '"') return true;
    int c = GetChar();
    if (c != 'u') {
      const char plain = c < 0 ? '\0' : JsonEscapedChar(static_cast<char>(c));
      if (plain == '\0') return Fail("bad escape in string");
      out->push_back(plain);
      continue;
    }
    unsigned code = 0;
    for (int i = 0; i < 4; ++i) {
      int h = GetChar();
      code <<= 4;
      if (h >= '0' && h <= '9')
        code |= static_cast<unsigned>(h - '0');
      else if (h >= 'a' && h <= 'f')
        code |= static_cast<unsigned>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F')
        code |= static_cast<unsigned>(h - 'A' + 10);
      else
        return Fail("bad \\u escape in string");
    }
    // Surrogate pairs are passed through as two 3-byte sequences.
    AppendUtf8(out, code);
  }
}

bool JsonPullReader::ReadBool(bool* out) {
  if (!ok()) return false;
  SkipSpace();
  const char* word = PeekChar() == 't' ? "true" : "false";
  for (const char* p = word; *p; ++p) {
    if (GetChar() != *p) return Fail("expected true or false");
  }
  *out = word[0] == 't';
  return true;
}

bool JsonPullReader::ReadNull() {
  if (!ok()) return false;
  SkipSpace();
  for (const char* p = "null"; *p; ++p) {
    if (GetChar() != *p) return Fail("expected null");
  }
  return true;
}

bool JsonPullReader::Skip() {
  switch (Peek()) {
    case Kind::kObject: {
      if (!BeginObject()) return false;
      while (NextKey(&scratch_)) {  // keys of a skipped object are not kept
        if (!Skip()) return false;
      }
      return ok();
    }
    case Kind::kArray: {
      if (!BeginArray()) return false;
      while (NextElement()) {
        if (!Skip()) return false;
      }
      return ok();
    }
    case Kind::kString:
      return ReadString(&scratch_);
    case Kind::kNumber: {
      JsonNumber n;
      return ReadNumber(&n);
    }
    case Kind::kBool: {
      bool b;
      return ReadBool(&b);
    }
    case Kind::kNull:
      return ReadNull();
    case Kind::kEnd:
      return Fail("unexpected end of file");
    case Kind::kError:
      return false;
  }
  return false;
}

bool JsonPullReader::AppendValueText(std::string* text, int depth) {
  if (depth > kMaxJsonDepth) return Fail("nesting too deep");
  switch (Peek()) {
    case Kind::kObject: {
      BeginObject();
      text->push_back('{');
      std::string key;
      bool first = true;
      while (NextKey(&key)) {
        if (!first) text->push_back(',');
        first = false;
        AppendJsonString(text, key);
        text->push_back(':');
        if (!AppendValueText(text, depth + 1)) return false;
      }
      text->push_back('}');
      return ok();
    }
    case Kind::kArray: {
      BeginArray();
      text->push_back('[');
      bool first = true;
      while (NextElement()) {
        if (!first) text->push_back(',');
        first = false;
        if (!AppendValueText(text, depth + 1)) return false;
      }
      text->push_back(']');
      return ok();
    }
    case Kind::kString: {
      std::string s;
      if (!ReadString(&s)) return false;
      AppendJsonString(text, s);
      return true;
    }
    case Kind::kNumber: {
      JsonNumber n;
      if (!ReadNumber(&n)) return false;
      if (n.is_integer) {
        if (n.negative) text->push_back('-');
        text->append(std::to_string(n.magnitude));
      } else {
        AppendDouble(text, n.value);
      }
      return true;
    }
    case Kind::kBool: {
      bool b;
      if (!ReadBool(&b)) return false;
      text->append(b ? "true" : "false");
      return true;
    }
    case Kind::kNull:
      if (!ReadNull()) return false;
      text->append("null");
      return true;
    case Kind::kEnd:
      return Fail("unexpected end of file");
    case Kind::kError:
      return false;
  }
  return false;
}

bool JsonPullReader::ReadJson(Json* out) {
  std::string text;
  if (!AppendValueText(&text, 0)) return false;
  auto parsed = ParseJson(text, path_);
  if (!parsed.ok()) return Fail(parsed.status().message());
  *out = std::move(parsed).value();
  return true;
}

}  // namespace dfx
