// The session record (<run record dir>/.session.json; collectors/
// artifact_layout.h says where): what `dfx-coordinator gather` needs to find
// a run's spooled artifacts after the coordinator died — the session id,
// the spool of launched agents and the spools attached agents reported, the
// endpoint, the launcher and the rank count. Written at the start of a run
// (and again once attached agents reported their spools); read by gather.
//
// Value type; the functions are thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/status.h"

namespace dfx::coordinator {

struct SessionRecord {
  uint64_t session = 0;
  std::filesystem::path spool;  // of locally launched agents (absolute)
  std::string endpoint;
  std::string launcher;
  int ranks = 0;
  int64_t coordinator_pid = 0;
  std::vector<std::filesystem::path> agent_spools;  // other spools agents reported
};

// Writes <dir>/.session.json atomically.
Status WriteSessionRecord(const std::filesystem::path& dir, const SessionRecord& record);
// Reads <dir>/.session.json; errors name the file, the key and what was expected.
Result<SessionRecord> ReadSessionRecord(const std::filesystem::path& dir);

}  // namespace dfx::coordinator
