// The protobuf wire encoding, written by hand (no protobuf runtime): varints,
// tags, fixed64 and length-delimited fields, and submessages written in place
// with their length patched at the end. What the Perfetto trace encoder
// (perfetto_trace_encoder.h) writes its packets with. Header-only; a Buffer
// belongs to one thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>

namespace dfx::view {

namespace proto_wire {

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2 };

inline constexpr size_t kMaxVarintBytes = 10;

// A byte buffer written through a raw cursor: each Put reserves its worst
// case (one compare) and stores its bytes. (Through std::string, every byte
// was a push_back that checked the capacity and rewrote the length and the
// terminator: PutVarint alone was 6% of a level-4 proto conversion's
// instructions.) Memory: the largest size it held.
class Buffer {
 public:
  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  size_t size() const { return static_cast<size_t>(cur_ - begin_); }
  bool empty() const { return cur_ == begin_; }
  char* data() { return begin_; }
  const char* data() const { return begin_; }
  std::string_view view() const { return {begin_, size()}; }
  void clear() { cur_ = begin_; }

  // Room for at least `n` more bytes; returns the cursor. Write there, then
  // Advance to the end of what was written.
  char* Reserve(size_t n) {
    if (static_cast<size_t>(end_ - cur_) < n) Grow(n);
    return cur_;
  }
  void Advance(char* cursor) { cur_ = cursor; }
  void Append(std::string_view s) {
    char* p = Reserve(s.size());
    if (!s.empty()) std::memcpy(p, s.data(), s.size());
    cur_ = p + s.size();
  }
  void Push(char c) {
    *Reserve(1) = c;
    ++cur_;
  }

 private:
  void Grow(size_t n) {
    const size_t used = size();
    size_t cap = std::max<size_t>(256, 2 * static_cast<size_t>(end_ - begin_));
    while (cap - used < n) cap *= 2;
    auto bigger = std::make_unique<char[]>(cap);
    if (used != 0) std::memcpy(bigger.get(), begin_, used);
    storage_ = std::move(bigger);
    begin_ = storage_.get();
    cur_ = begin_ + used;
    end_ = begin_ + cap;
  }
  std::unique_ptr<char[]> storage_;
  char* begin_ = nullptr;
  char* cur_ = nullptr;
  char* end_ = nullptr;
};

// Raw writers: `p` has room (see Buffer::Reserve); each returns the end.
inline char* WriteVarint(char* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}
inline size_t VarintBytes(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}
inline char* WriteTag(char* p, uint32_t field, WireType type) {
  return WriteVarint(p, (uint64_t{field} << 3) | type);
}

inline void PutVarint(Buffer& out, uint64_t v) {
  out.Advance(WriteVarint(out.Reserve(kMaxVarintBytes), v));
}
inline void PutTag(Buffer& out, uint32_t field, WireType type) {
  out.Advance(WriteTag(out.Reserve(kMaxVarintBytes), field, type));
}
// uint32/uint64/int32/int64/bool/enum fields (negative ints take 10 bytes, as
// protobuf encodes them).
inline void PutUint(Buffer& out, uint32_t field, uint64_t v) {
  char* p = out.Reserve(2 * kMaxVarintBytes);
  out.Advance(WriteVarint(WriteTag(p, field, kVarint), v));
}
inline void PutInt(Buffer& out, uint32_t field, int64_t v) {
  PutUint(out, field, static_cast<uint64_t>(v));
}
inline void PutFixed64(Buffer& out, uint32_t field, uint64_t v) {
  char* p = WriteTag(out.Reserve(kMaxVarintBytes + 8), field, kFixed64);
  for (int i = 0; i < 8; ++i) *p++ = static_cast<char>((v >> (8 * i)) & 0xff);
  out.Advance(p);
}
inline void PutDouble(Buffer& out, uint32_t field, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  PutFixed64(out, field, bits);
}
inline void PutBytes(Buffer& out, uint32_t field, std::string_view v) {
  char* p = out.Reserve(2 * kMaxVarintBytes + v.size());
  p = WriteVarint(WriteTag(p, field, kLengthDelimited), v.size());
  if (!v.empty()) std::memcpy(p, v.data(), v.size());
  out.Advance(p + v.size());
}

// A length-delimited submessage written in place: Begin writes the tag and a
// one-byte length, End patches the length (moving the body when it needs more
// bytes). Nest freely; the body is whatever is appended in between.
inline size_t BeginNested(Buffer& out, uint32_t field) {
  char* p = WriteTag(out.Reserve(kMaxVarintBytes + 1), field, kLengthDelimited);
  *p++ = '\0';
  out.Advance(p);
  return out.size();
}
inline void EndNested(Buffer& out, size_t body_begin) {
  const uint64_t len = out.size() - body_begin;
  if (len < 0x80) {
    out.data()[body_begin - 1] = static_cast<char>(len);
    return;
  }
  const size_t extra = VarintBytes(len) - 1;
  char* end = out.Reserve(extra);
  char* body = out.data() + body_begin;
  std::memmove(body + extra, body, len);
  WriteVarint(body - 1, len);
  out.Advance(end + extra);
}

}  // namespace proto_wire

}  // namespace dfx::view
