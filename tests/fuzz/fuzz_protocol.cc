// Fuzz target: one frame from a peer, through everything a receiver does
// with it before acting on it — Decode, the zero-copy chunk view, Validate
// (as the coordinator and as a serve agent), and the path sanitizer on the
// input itself. None of them may crash, hang or allocate without bound.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "protocol/codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dfx::protocol;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  (void)SanitizeArtifactPath(bytes);
  // Frames are received into aligned storage (FrameBytes): do the same.
  const std::string frame(bytes);
  (void)DecodeChunkView(frame);
  auto message = Decode(frame);
  if (!message.ok()) return 0;
  (void)Validate(*message, Expectations{});
  Expectations coordinator;
  coordinator.session_id = 0x1234;
  coordinator.ranks = {0, 1};
  (void)Validate(*message, coordinator);
  // What decodes must encode again (the limits are the same both ways).
  (void)Encode(*message);
  return 0;
}
