#include "common/metrics.h"

#include <fmt/format.h>

#include "common/status.h"

namespace dfx::metrics {
namespace {

bool IsName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!letter && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

// HELP text: backslash and line feed escaped (exposition format 0.0.4).
std::string EscapeHelp(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

// A label value: the same, and the double quote.
std::string EscapeLabelValue(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '"') {
      out += "\\\"";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

const Registry::Family* Registry::Find(std::string_view name) const {
  for (const Family& f : families_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

Counter& Registry::Get(std::string_view name, std::string_view help, std::string_view label,
                       std::string_view value) {
  std::lock_guard lock(mutex_);
  Family* family = const_cast<Family*>(Find(name));
  if (family == nullptr) {
    DFX_CHECK(IsName(name) && name.size() > 6 && name.substr(name.size() - 6) == "_total");
    DFX_CHECK(label.empty() || IsName(label));
    families_.push_back(Family{std::string(name), std::string(help), std::string(label), {}});
    family = &families_.back();
  }
  for (auto& [v, counter] : family->samples) {
    if (v == value) return *counter;
  }
  family->samples.emplace_back(std::string(value), std::make_unique<Counter>());
  return *family->samples.back().second;
}

uint64_t Registry::Value(std::string_view name, std::string_view value) const {
  std::lock_guard lock(mutex_);
  const Family* family = Find(name);
  if (family == nullptr) return 0;
  for (const auto& [v, counter] : family->samples) {
    if (v == value) return counter->Value();
  }
  return 0;
}

std::string Registry::Text() const {
  std::lock_guard lock(mutex_);
  std::string out;
  for (const Family& f : families_) {
    out += fmt::format("# HELP {} {}\n# TYPE {} counter\n", f.name, EscapeHelp(f.help), f.name);
    for (const auto& [value, counter] : f.samples) {
      if (f.label.empty()) {
        out += fmt::format("{} {}\n", f.name, counter->Value());
      } else {
        out += fmt::format("{}{{{}=\"{}\"}} {}\n", f.name, f.label, EscapeLabelValue(value),
                           counter->Value());
      }
    }
  }
  return out;
}

Registry& Process() {
  static Registry* registry = new Registry();  // never destroyed: counted until exit
  return *registry;
}

Counter& SessionsServed() {
  static Counter& c = Process().Get(
      "dfx_sessions_total",
      "Sessions served: runs a serve agent attached to; runs and gathers of a coordinator.");
  return c;
}

Counter& Dispatches(std::string_view status) {
  return Process().Get("dfx_dispatches_total", "Dispatches that ended, by status.", "status",
                       status);
}

Counter& BytesSpooled() {
  static Counter& c = Process().Get("dfx_artifact_bytes_spooled_total",
                                    "Artifact bytes this agent's chips wrote into its spool.");
  return c;
}

Counter& BytesSent() {
  static Counter& c = Process().Get("dfx_artifact_bytes_sent_total",
                                    "Artifact bytes this agent streamed to a coordinator.");
  return c;
}

Counter& BytesReceived() {
  static Counter& c = Process().Get("dfx_artifact_bytes_received_total",
                                    "Artifact bytes this coordinator received from agents.");
  return c;
}

Counter& Reconnects() {
  static Counter& c = Process().Get("dfx_reconnects_total",
                                    "Connections to a peer re-established after the first one.");
  return c;
}

Counter& HandshakesRefused() {
  static Counter& c = Process().Get(
      "dfx_handshakes_refused_total",
      "Connections turned away at the CURVE handshake (refused peers; refusals of this agent).");
  return c;
}

Counter& CreditsWithheld() {
  static Counter& c =
      Process().Get("dfx_credits_withheld_total",
                    "Times an agent used up its credit window with chunks still waiting for the "
                    "writer: its credits were withheld until the disk caught up.");
  return c;
}

Counter& ChunksWithoutCredit() {
  static Counter& c =
      Process().Get("dfx_chunks_without_credit_total",
                    "Artifact chunks that came without a credit (the agent was dropped for it).");
  return c;
}

void DeclareAgentCounters() {
  SessionsServed();
  Dispatches("ok");
  Dispatches("failed");
  BytesSpooled();
  BytesSent();
  Reconnects();
  HandshakesRefused();
}

void DeclareCoordinatorCounters() {
  SessionsServed();
  Dispatches("ok");
  Dispatches("failed");
  BytesReceived();
  HandshakesRefused();
  CreditsWithheld();
  ChunksWithoutCredit();
}

}  // namespace dfx::metrics
