#include "rank_agent/spool_sum.h"

#include <fstream>

#include "common/file_util.h"

namespace dfx::rank_agent {

namespace fs = std::filesystem;

fs::path SumPath(const fs::path& dispatch_dir, const std::string& rel) {
  return dispatch_dir / kSumDir / rel;
}

bool IsSumFile(const std::string& rel) {
  return rel.size() > kSumDir.size() && rel.compare(0, kSumDir.size(), kSumDir) == 0 &&
         rel[kSumDir.size()] == '/';
}

Status WriteSum(const fs::path& dispatch_dir, const std::string& rel) {
  DFX_ASSIGN_OR_RETURN(uint64_t sum, ChecksumFile(dispatch_dir / rel));
  return WriteFileAtomic(SumPath(dispatch_dir, rel), "xxh64:" + Hex64(sum) + "\n");
}

std::optional<uint64_t> ReadSum(const fs::path& dispatch_dir, const std::string& rel) {
  std::ifstream in(SumPath(dispatch_dir, rel), std::ios::binary);
  char buf[32] = {};
  in.read(buf, sizeof(buf) - 1);
  const std::string text(buf, static_cast<size_t>(in.gcount()));
  if (text.size() != 23 || text.rfind("xxh64:", 0) != 0 || text.back() != '\n') return {};
  const std::string hex = text.substr(6, 16);
  if (hex.find_first_not_of("0123456789abcdef") != std::string::npos) return {};
  return std::stoull(hex, nullptr, 16);
}

}  // namespace dfx::rank_agent
