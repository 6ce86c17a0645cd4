// Helpers for end-to-end tests that talk to the real binaries as raw
// ZeroMQ peers (a hostile agent, a fake coordinator): the session record a
// run publishes, and bounded receives of decoded messages. Header-only; used
// by tests/l3 and tests/security.
#pragma once

#include <optional>
#include <utility>

#include "protocol/channel.h"
#include "protocol/codec.h"
#include "tests/l3/e2e_util.h"

namespace dfx::e2e {

// Waits for <work>/dfx_outputs/.session.json and returns it (not an object
// if the coordinator exited first or 60 s passed).
inline Json WaitSession(const fs::path& work, Process& coordinator) {
  Json s;
  WaitFor(
      [&] {
        s = LoadJson(work / "dfx_outputs/.session.json");
        return s.is_object() || coordinator.Wait(0);
      },
      60);
  return s;
}

// The next decodable message within `timeout_s`.
inline std::optional<protocol::Message> ReceiveMessage(protocol::DealerChannel& ch,
                                                       int timeout_s = 30) {
  for (int waited = 0; waited < timeout_s * 20; ++waited) {
    auto r = ch.Receive(50);
    if (!r.ok()) return std::nullopt;
    if (r->frame) {
      auto m = protocol::Decode(r->frame->bytes);
      if (m.ok()) return *m;
    }
  }
  return std::nullopt;
}

// Receives until a message of type T arrives (others are skipped).
template <typename T>
std::optional<std::pair<protocol::Header, T>> ReceiveA(protocol::DealerChannel& ch,
                                                       int timeout_s = 30) {
  for (int i = 0; i < 1000; ++i) {
    auto m = ReceiveMessage(ch, timeout_s);
    if (!m) return std::nullopt;
    if (auto* t = std::get_if<T>(&m->body)) return std::make_pair(m->header, *t);
  }
  return std::nullopt;
}

}  // namespace dfx::e2e
