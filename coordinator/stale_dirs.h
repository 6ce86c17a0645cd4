// The rank<N>/d<K>/ directories an earlier run left in dfx_outputs/: the
// d<K> numbering restarts every run (docs/run-config.md §2.7), so a new run
// clears them once it really started (session.h), and a directory it cannot
// clear fails the run instead of passing for one of this run's dispatches.
// Threads: the caller's.
#pragma once

#include <filesystem>

#include "common/status.h"

namespace dfx::coordinator {

// Removes every rank<N>/d<K>/ under `dfx_dir`, and the rank<N>/ left empty.
// First it checks that each can be removed, without removing anything: no
// mount point inside (a different device) and every directory in it
// writable and searchable by this process; a directory that fails the check
// is an error naming it and why, and the earlier run's files are all kept.
// A removal that fails anyway (an immutable or busy NFS file) is an error
// naming the directory and the OS error. Real directories only: a link is
// never followed (collectors::ListDispatchDirs skips them, remove_all does
// not follow links inside what it removes).
Status ClearStaleDispatchDirs(const std::filesystem::path& dfx_dir);

}  // namespace dfx::coordinator
