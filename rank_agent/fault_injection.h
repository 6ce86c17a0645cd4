// Faults a test can inject into the agent (the best-effort paths of the DFX
// pass protocol, docs/design.md §5, §9). Production code only reads this struct;
// only main() fills it (from DFX_FAULT_GRAPH_PASS=1 and
// DFX_FAULT_FORGET_PROGRAMS=1 and DFX_FAULT_WRONG_BULK_TOKEN=1 in the environment, so
// that a test can set it on a coordinator and reach every agent it starts).
// Plain value type; everything off by default.
#pragma once

#include <string>

namespace dfx::rank_agent {

struct FaultInjection {
  // Non-empty: every graph pass (dep_gen capture) fails before it runs, with
  // this error text; other passes run as usual.
  std::string graph_pass_error;
  // The agent keeps no program between dispatches (ProgramCache of no
  // entries): every dispatch sent by hash is answered program_unknown and
  // comes again with its program.
  bool forget_programs = false;
  // The agent presents a wrong token on the local bulk path, so the
  // coordinator refuses its handshake there (as it would another pid's).
  bool wrong_bulk_token = false;
  bool operator==(const FaultInjection&) const = default;
};

}  // namespace dfx::rank_agent
