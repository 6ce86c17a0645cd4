// The viewers' check of what they read against the run manifest
// (docs/formats.md §16.1): when a run_manifest.json sits above an input, each
// artifact it lists under that input must still have the XXH64 checksum the
// coordinator verified when it stored the file. A changed byte is refused
// (or, with --no-verify, read after a warning). Also the manifest's word on
// what did not succeed, for `dfx-view summary`.
//
// Functions over the filesystem; thread-safe.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "collectors/run_manifest.h"
#include "common/status.h"

namespace dfx::view {

// The run_manifest.json of the run `input` (a file or a directory) belongs
// to: in the directory itself or up to four levels above
// (dfx_outputs/rank<N>/d<K>/args_dump/args.bin). nullopt when none exists.
std::optional<std::filesystem::path> FindRunManifest(const std::filesystem::path& input);

// Checks, against the manifest above `input`, every artifact listed with a
// checksum that lies under `input` (a directory), or in the directory of
// `input` (a file: a viewer reads its siblings too, the name map and
// deps.json). A mismatch is an error naming the file, the expected and the
// actual checksum and --no-verify; with Verify::kWarn it is a warning on
// `err` instead. No manifest: nothing to check. An unreadable manifest is a
// warning. Files the manifest lists but that are absent are left to the
// viewer (it says what is missing). kSkip checks nothing (the coordinator's
// own calls: it verified every file as it stored it). args.bin, the one bulky payload only
// `dfx-view dump` reads, is checked only with `with_args_bin`: the check
// reads each file once more (from the page cache, at XXH64's speed).
enum class Verify {
  kRefuse,  // a mismatch is an error (the default)
  kWarn,    // --no-verify: a mismatch is a warning
  kSkip,    // no check at all
};
Status CheckAgainstManifest(const std::filesystem::path& input, Verify verify, std::ostream& err,
                            bool with_args_bin = false);

// A rank or a dispatch the manifest does not mark ok.
struct NotOk {
  std::string what;    // "rank 1" or "rank0/d2"
  std::string status;  // the manifest's status text ("failed", "interrupted", ...)
  std::string error;   // the manifest's error text; "" when none
};

// The run's status and every rank and dispatch that is not ok, in the order
// of the manifest.
struct RunHealth {
  std::string status;  // the run's status ("ok", "failed", ...)
  std::vector<NotOk> not_ok;
  // Dispatches that ran without collectors because someone asked so
  // (--capture-ranks, --capture-dispatches, a plan step, `dfx-coordinator
  // capture`): status "not captured (by request)", error = what asked.
  // Not missing; one entry per dispatch (not per pass).
  std::vector<NotOk> not_captured;
  std::string work_dir;  // the run's work dir, as the manifest names it (for `gather`)
};

// The status text of RunHealth::not_captured.
extern const char* const kNotCapturedByRequest;

// From the manifest above `input`; nullopt when there is none (or it
// cannot be read: a warning on `err`).
std::optional<RunHealth> ReadRunHealth(const std::filesystem::path& input, std::ostream& err);

}  // namespace dfx::view
