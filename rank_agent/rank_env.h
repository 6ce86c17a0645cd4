// Where an agent's rank comes from (design.md §8): --rank when given;
// otherwise MPI (MPI_Init + MPI_Comm_rank) when started by mpirun; otherwise
// the usual launcher variables OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID.
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

// Resolves the rank: `flag_rank` if set, else `mpi`, else the environment.
// Error (naming the variables looked at) when none is available.
Result<LaunchRank> ResolveRank(std::optional<int> flag_rank, const std::optional<LaunchRank>& mpi);

}  // namespace dfx::rank_agent
