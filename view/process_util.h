// Running a child process with a bounded wait (used to run Graphviz).
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace dfx::view {

// The absolute path of `program` found on $PATH, if any.
std::optional<std::filesystem::path> FindOnPath(const std::string& program);

struct ChildResult {
  int exit_code = 0;
  std::string stderr_text;  // up to 64 KiB of the child's stderr
};

// Runs argv[0] (searched on PATH) with stdout redirected to `stdout_path`.
// Returns DeadlineExceeded (after killing the child) when it runs longer than
// `timeout`; NotFound when the program cannot be started.
Result<ChildResult> RunChild(const std::vector<std::string>& argv,
                             const std::filesystem::path& stdout_path,
                             std::chrono::milliseconds timeout);

}  // namespace dfx::view
