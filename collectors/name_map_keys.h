// The keys of a name map (docs/formats.md §3), written once for its writer
// (WriteNameMap) and its reader (ReadNameMap). Constants only.
#pragma once

#include "collectors/key_text.h"

namespace dfx::collectors::name_map_keys {

inline constexpr KeyText kLevel = "level";
inline constexpr KeyText kOrchestratorName = "orchestrator_name";
inline constexpr KeyText kCallableIdToName = "callable_id_to_name";

}  // namespace dfx::collectors::name_map_keys
