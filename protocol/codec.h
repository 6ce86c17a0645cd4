// Encode / decode / validate protocol messages (design.md §7).
//
// Encode turns a Message into the bytes of one ZeroMQ frame (an unpacked
// Cap'n Proto flat array). Decode copies the frame into word-aligned memory
// (received frames are not aligned), parses it under reader limits and turns
// it into plain structs; anything malformed, truncated or oversized is an
// InvalidArgument naming what was wrong, never a crash. Stateless functions,
// safe from any thread.
#pragma once

#include <cstdint>
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

// The one path sanitizer for artifact names (design.md §7, style.md §11).
// Accepts a path relative to rank<N>/d<K>/ made of plain components
// ([A-Za-z0-9._+-@=,], no empty component, no "." or ".." component, no
// leading '/', no backslash, no NUL, at most kMaxTextBytes) and returns it in
// canonical form. Anything else is InvalidArgument naming the path and the rule.
Result<std::string> SanitizeArtifactPath(std::string_view path);

// "rank<N>/d<K>" for a dispatch directory.
std::string DispatchDirName(int32_t rank, uint32_t k);

}  // namespace dfx::protocol
