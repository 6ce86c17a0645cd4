// `dfx-view dump`: the args-dump viewer (docs/formats.md §9): lists manifest
// entries with filters, or exports selected args as text files decoded from
// args.bin. Called from one thread.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>

#include "common/status.h"

namespace dfx::view {

struct DumpViewerOptions {
  std::filesystem::path dump_dir;
  std::optional<std::string> task;   // exact manifest task_id string
  std::optional<std::string> stage;  // before | after
  std::optional<std::string> role;   // input | output | inout
  std::optional<long> arg;
  std::optional<long> index;  // manifest position; always exports
  bool do_export = false;
};

Status RunDumpViewer(const DumpViewerOptions& options, std::ostream& out, std::ostream& err);

// Formats a float with `digits` significant digits the way Python's "%.Ng" does.
std::string FormatSignificant(double v, int digits);

}  // namespace dfx::view
