// `dfx-view scope-stats`: scope_stats.jsonl (docs/formats.md §11) → a
// self-contained HTML report (§12): header, formula guide, top peaks table
// against capacity, and per-resource, per-ring inline SVG charts with hover
// and click-to-enlarge. Called from one thread.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace dfx::view {

struct ScopePeak {
  std::string resource;  // task_window | heap | dep_pool | tensormap
  std::string ring;      // "0".."3" or "global"
  std::string metric;    // scope_high_water | real_occupancy
  double peak = 0;       // in the resource's unit (heap: MiB)
  double capacity = 0;   // same unit; 0 = unknown
  double use_pct = 0;
  std::string site;
  long scope_index = 0;
};

struct ScopeReport {
  std::vector<ScopePeak> peaks;
  size_t records = 0, pairs = 0, rings = 0;
  bool fatal = false;
  uint64_t dropped = 0;
  std::string html;
};

// Builds the report for `jsonl` (warnings such as unmatched ends go to `err`).
Result<ScopeReport> BuildScopeReport(const std::filesystem::path& jsonl, std::ostream& err);

// Writes <out_dir or input dir>/scope_stats.html.
Status RunScopeStats(const std::filesystem::path& jsonl,
                     const std::optional<std::filesystem::path>& out_dir, std::ostream& out,
                     std::ostream& err);

}  // namespace dfx::view
