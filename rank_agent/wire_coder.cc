#include "rank_agent/wire_coder.h"

#include "common/log.h"
#include "protocol/codec.h"

namespace dfx::rank_agent {

using protocol::WireCompression;

bool IsLocalEndpoint(std::string_view endpoint) {
  auto starts = [&endpoint](std::string_view p) { return endpoint.substr(0, p.size()) == p; };
  if (starts("ipc://") || starts("inproc://")) return true;
  if (!starts("tcp://")) return false;
  std::string_view host = endpoint.substr(6);
  // tcp://[iface;]host:port
  if (auto semi = host.find(';'); semi != std::string_view::npos) host = host.substr(semi + 1);
  return host.substr(0, 4) == "127." || host.substr(0, 5) == "[::1]" ||
         host.substr(0, 10) == "localhost:";
}

void WireCoder::SetMode(WireCompression mode) {
  if (mode != mode_) announced_ = false;
  mode_ = mode;
  Announce();
}

void WireCoder::SetLocalPath(bool on) {
  if (on != local_path_) announced_ = false;
  local_path_ = on;
  Announce();
}

bool WireCoder::StartCompressed() const {
  switch (mode_) {
    case WireCompression::kZstd:
      return true;
    case WireCompression::kOff:
      return false;
    case WireCompression::kAuto:
      return !local_path_ && !IsLocalEndpoint(coordinator_);
  }
  return false;
}

void WireCoder::Announce() {
  const bool choice = StartCompressed();
  if (announced_ && choice == last_choice_) return;
  announced_ = true;
  last_choice_ = choice;
  if (mode_ != WireCompression::kAuto) {
    DFX_LOG_INFO("wire compression {}: artifact chunks go {}", protocol::WireCompressionName(mode_),
                 choice ? "zstd-compressed" : "raw");
    return;
  }
  DFX_LOG_INFO("wire compression auto: {}",
               choice ? "zstd (the coordinator " + coordinator_ +
                            " is not on this host; a stream whose first chunk does not shrink "
                            "to 80% goes raw)"
                      : std::string("raw (the coordinator is on this host: ") +
                            (local_path_ ? "the local bulk path" : coordinator_) + ")");
}

Result<std::string> WireCoder::Encode(const protocol::Header& header, uint64_t transfer_id,
                                      uint64_t offset, std::string_view raw, bool first,
                                      bool* compress, uint64_t* wire_bytes) {
  protocol::ArtifactChunk chunk{transfer_id, offset, {}, protocol::ChunkCoding::kZstd, raw.size()};
  DFX_RETURN_IF_ERROR(compressor_.Compress(raw, &frame_));
  const bool pays = static_cast<double>(frame_.size()) <= kAutoMaxWireShare * raw.size();
  if (first && mode_ == WireCompression::kAuto && !pays) {
    *compress = false;
    DFX_LOG_DEBUG("stream {}: its first chunk shrinks only to {} of {} bytes; it goes raw",
                  transfer_id, frame_.size(), raw.size());
  }
  // A chunk whose frame is no smaller (a tiny file, random bytes) goes raw
  // in any mode: the wire never carries more than the file.
  if (!*compress || frame_.size() >= raw.size()) {
    chunk.coding = protocol::ChunkCoding::kRaw;
    chunk.raw_size = 0;
    chunk.data.assign(raw);
  } else {
    chunk.data.swap(frame_);
  }
  *wire_bytes = chunk.data.size();
  auto out = protocol::Encode(protocol::Message{header, std::move(chunk)});
  return out;
}

}  // namespace dfx::rank_agent
