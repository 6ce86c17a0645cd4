// The parts of the run report (run_report.h) read from the run manifest
// (docs/formats.md §15, run_manifest.json): the coordinator's host lane,
// each rank's clock offset with its uncertainty bound, and what was
// captured and what was not. Functions; called from one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>

#include "common/json.h"
#include "view/run_summary.h"

namespace dfx::view {

// The run manifest of the run `input` belongs to: input/run_manifest.json
// (W/dfx_outputs), or two levels up from one rank<N>/d<K>; nullopt when
// there is none (an L2 run, a copied dispatch directory). Links are not followed.
std::optional<std::filesystem::path> RunManifestFor(const std::filesystem::path& input);

// The directory of dispatch (rank, k) under `input`: input/rank<N>/d<K>
// when it exists, else `input` itself (one dispatch directory, an L2 run).
std::filesystem::path ListedDispatchDir(const std::filesystem::path& input, int32_t rank,
                                        uint32_t k);

// Sets data["host"], data["clock"] and data["capture"]; without a manifest
// they say why they are empty. Above `max_rows` ranks the clock list keeps the
// ranks with the widest bounds. A manifest that cannot be read is a warning on `err`.
void ManifestReportData(const RunSummary& s, size_t max_rows, std::ostream& err, Json& data);

}  // namespace dfx::view
