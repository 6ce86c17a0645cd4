// Where an agent's rank comes from (docs/design.md §8): --rank when given;
// otherwise the launcher's environment (OMPI_COMM_WORLD_RANK, PMIX_RANK,
// PMI_RANK, SLURM_PROCID), read without initialising MPI, so the agent says
// HELLO before any collective MPI call and a rank that dies early fails
// alone; MPI_Init + MPI_Comm_rank only for an MPI launcher that sets none
// of them.
#pragma once

#include <optional>
#include <string>

#include "common/status.h"

namespace dfx::rank_agent {

struct LaunchRank {
  int rank = 0;
  int world_size = 1;
  std::string source;  // "--rank", "MPI_Comm_rank", "OMPI_COMM_WORLD_RANK", ...
};

// Holds MPI initialised for the life of the process when the agent was
// started by an MPI launcher; finalises it on destruction. One per process,
// main thread only.
class MpiScope {
 public:
  MpiScope();
  ~MpiScope();
  MpiScope(const MpiScope&) = delete;
  MpiScope& operator=(const MpiScope&) = delete;
  // Initialises MPI if the environment says an MPI launcher started us.
  // Returns the MPI rank/size, or nullopt when not under MPI.
  std::optional<LaunchRank> InitIfLaunched();

 private:
  bool initialised_ = false;
};

// The rank the launcher's environment gives, without MPI; nullopt if none.
std::optional<LaunchRank> RankFromEnvironment();

// Resolves the rank: `flag_rank` if set, else the environment, else `mpi`.
// Error (naming the variables looked at) when none is available.
Result<LaunchRank> ResolveRank(std::optional<int> flag_rank, const std::optional<LaunchRank>& mpi);

}  // namespace dfx::rank_agent
