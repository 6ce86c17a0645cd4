// Encode / decode / validate protocol messages (docs/design.md §7).
//
// Encode turns a Message into the bytes of one ZeroMQ frame (an unpacked
// Cap'n Proto flat array). Decode copies the frame into word-aligned memory
// (received frames are not aligned), parses it under reader limits and turns
// it into plain structs; anything malformed, truncated or oversized is an
// InvalidArgument naming what was wrong, never a crash. Stateless functions,
// safe from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "common/status.h"
#include "protocol/messages.h"

namespace dfx::protocol {

// Encodes `message`. Fails only when a field breaks a limit of messages.h
// (e.g. a chunk larger than kMaxChunkBytes), so a peer never sees it.
Result<std::string> Encode(const Message& message);

// Decodes one frame. Checks the structure and the per-field limits
// (kMaxFrameBytes, text sizes, chunk size, 4 ring entries, enum ranges) but
// not the session/version/rank: that is Validate's job, because only the
// receiver knows what it expects.
Result<Message> Decode(std::string_view frame);

// An ArtifactChunk decoded in place: `data` points into the frame it was
// decoded from and is valid only while that frame's bytes live.
struct ChunkView {
  Header header;
  uint64_t transfer_id = 0;
  uint64_t offset = 0;
  std::string_view data;
  ChunkCoding coding = ChunkCoding::kRaw;  // kZstd: `data` is one frame of raw_size bytes
  uint64_t raw_size = 0;
};

// The zero-copy path for artifact data. If `frame` is an ArtifactChunk,
// decodes it without copying its payload (same checks as Decode); returns
// std::nullopt for any other message (decode those with Decode). A frame
// that is not word-aligned is not parsed in place: nullopt, use Decode.
Result<std::optional<ChunkView>> DecodeChunkView(std::string_view frame);

// Encodes an ArtifactChunk of at most `size` bytes whose payload `fill`
// writes straight into the encoded frame (e.g. pread(2) from the file), so
// the data is copied once. `fill(dst, size)` returns how many bytes it wrote
// (<= size; fewer shrinks the chunk) or an error, which EncodeChunk returns.
// On success *filled (if set) is the payload inside the returned bytes, so
// the caller can checksum it while it is hot.
using ChunkFill = std::function<Result<size_t>(char* dst, size_t size)>;
Result<std::string> EncodeChunk(const Header& header, uint64_t transfer_id, uint64_t offset,
                                size_t size, const ChunkFill& fill,
                                std::string_view* filled = nullptr);

// What a receiver expects of a peer's messages.
struct Expectations {
  uint64_t session_id = 0;  // 0 = accept any (a serve agent before its first session)
  std::set<int32_t> ranks;  // the ranks the peer may speak about; empty = any
};

// Checks version, session and rank of a decoded message against `expect`,
// plus message-specific rules (artifact paths through SanitizeArtifactPath).
// Messages whose session must not be checked (Hello, Error) are checked only
// for version. The error code says how bad it is:
//   kFailedPrecondition for version/session mismatch (turn the peer away),
//   kInvalidArgument for a bad message (log and drop it).
Status Validate(const Message& message, const Expectations& expect);

// The one path sanitizer for artifact names (docs/design.md §7, docs/design.md §11.11).
// Accepts a path relative to rank<N>/d<K>/ made of plain components
// ([A-Za-z0-9._+-@=,], no empty component, no "." or ".." component, no
// leading '/', no backslash, no NUL, at most kMaxTextBytes) and returns it in
// canonical form. Anything else is InvalidArgument naming the path and the rule.
Result<std::string> SanitizeArtifactPath(std::string_view path);

}  // namespace dfx::protocol
