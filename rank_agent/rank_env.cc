#include "rank_agent/rank_env.h"

// The C API only: Open MPI's C++ bindings need libmpi_cxx.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <cstdlib>
#include <utility>

namespace dfx::rank_agent {

namespace {

std::optional<int> EnvInt(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  char* end = nullptr;
  long n = std::strtol(v, &end, 10);
  if (*end != '\0' || n < 0 || n > 1 << 30) return std::nullopt;
  return static_cast<int>(n);
}

}  // namespace

MpiScope::MpiScope() = default;

MpiScope::~MpiScope() {
  if (initialised_) MPI_Finalize();
}

std::optional<LaunchRank> MpiScope::InitIfLaunched() {
  // Only an MPI launcher sets these; a plain process must not pay MPI_Init.
  if (!EnvInt("OMPI_COMM_WORLD_SIZE") && !EnvInt("PMI_SIZE") && !EnvInt("PMIX_RANK")) {
    return std::nullopt;
  }
  if (MPI_Init(nullptr, nullptr) != MPI_SUCCESS) return std::nullopt;
  initialised_ = true;
  LaunchRank r;
  MPI_Comm_rank(MPI_COMM_WORLD, &r.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &r.world_size);
  r.source = "MPI_Comm_rank";
  return r;
}

std::optional<LaunchRank> RankFromEnvironment() {
  // rank variable, size variable: Open MPI, PMIx (Open MPI 5, MPICH with
  // PMIx), Hydra's PMI (MPICH, Intel MPI), Slurm.
  static const std::pair<const char*, const char*> kVariables[] = {
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
      {"PMIX_RANK", "PMIX_SIZE"},
      {"PMI_RANK", "PMI_SIZE"},
      {"SLURM_PROCID", "SLURM_NTASKS"}};
  for (auto [rank, size] : kVariables) {
    if (auto v = EnvInt(rank)) return LaunchRank{*v, EnvInt(size).value_or(0), rank};
  }
  return std::nullopt;
}

Result<LaunchRank> ResolveRank(std::optional<int> flag_rank, const std::optional<LaunchRank>& mpi) {
  if (flag_rank) {
    if (*flag_rank < 0) return InvalidArgument("--rank must be >= 0");
    return LaunchRank{*flag_rank, 0, "--rank"};
  }
  if (auto env = RankFromEnvironment()) return *env;
  if (mpi) return *mpi;
  return InvalidArgument(
      "cannot tell this agent's rank: pass --rank R, or start it with mpirun / srun (which set "
      "OMPI_COMM_WORLD_RANK / PMIX_RANK / PMI_RANK / SLURM_PROCID)");
}

}  // namespace dfx::rank_agent
