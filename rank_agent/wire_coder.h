// How an agent's artifact chunks travel (--wire-compression, docs/design.md
// §7): raw, or each chunk as one zstd frame (protocol/chunk_zstd.h). The
// coordinator names the mode in each Dispatch and Credit; "auto" is decided
// here: raw when the coordinator is on this host (a loopback or ipc://
// endpoint, or the local bulk path), where compressing costs more than the
// bytes it saves; zstd otherwise, except that a stream whose first chunk
// does not shrink to kAutoMaxWireShare of its size goes raw from then on
// (already-compressed or random data). The choice is logged at info once per
// change; the coordinator sees it per chunk and records it in the manifest.
//
// Threads: the agent's event loop only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "protocol/chunk_zstd.h"
#include "protocol/messages.h"

namespace dfx::rank_agent {

// auto keeps compressing a stream whose first chunk's frame is at most this
// share of the raw bytes (a 1.25x ratio).
constexpr double kAutoMaxWireShare = 0.8;

// Whether `endpoint` reaches a peer on this host: ipc://, inproc://, or tcp
// to a loopback address (127.0.0.0/8, ::1, localhost).
bool IsLocalEndpoint(std::string_view endpoint);

class WireCoder {
 public:
  explicit WireCoder(std::string coordinator) : coordinator_(std::move(coordinator)) {}

  void SetMode(protocol::WireCompression mode);
  // The local bulk path carries the streams from now on (auto: raw).
  void SetLocalPath(bool on);
  // Whether a stream that starts now starts compressed.
  bool StartCompressed() const;
  // The ArtifactChunk frame of `raw` at `offset`, zstd-coded when that makes
  // it smaller. Under auto, the first chunk of a stream (`first`) that does
  // not shrink to kAutoMaxWireShare turns *compress off: it and the rest of
  // the stream go raw. *wire_bytes: the payload bytes sent.
  Result<std::string> Encode(const protocol::Header& header, uint64_t transfer_id, uint64_t offset,
                             std::string_view raw, bool first, bool* compress,
                             uint64_t* wire_bytes);

 private:
  void Announce();

  std::string coordinator_;
  protocol::WireCompression mode_ = protocol::WireCompression::kAuto;
  bool local_path_ = false;
  bool announced_ = false;
  bool last_choice_ = false;
  protocol::ChunkCompressor compressor_;
  std::string frame_;
};

}  // namespace dfx::rank_agent
