// The driver of a fuzz target when libFuzzer is not linked (gcc, the ASan
// CI build): runs every file under the given paths, then deterministic
// mutations of each (truncations, byte flips, bracket runs), so the seed
// corpus and its neighbourhood are exercised by every test run. Exit 0 when
// nothing crashed (a crash is the sanitizer's or the kernel's abort).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

void Run(const std::string& input) {
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

std::string Read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    const fs::path p = argv[i];
    if (fs::is_directory(p)) {
      for (const auto& e : fs::recursive_directory_iterator(p)) {
        if (e.is_regular_file()) files.push_back(e.path());
      }
    } else {
      files.push_back(p);
    }
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR|FILE...\n", argv[0]);
    return 2;
  }
  std::mt19937_64 rng(0x5eed);
  size_t runs = 0;
  for (const fs::path& f : files) {
    const std::string seed = Read(f);
    Run(seed);
    ++runs;
    // Truncations at every 1/16th, and 200 random mutants.
    for (size_t cut = 0; cut < seed.size(); cut += std::max<size_t>(1, seed.size() / 16)) {
      Run(seed.substr(0, cut));
      ++runs;
    }
    for (int m = 0; m < 200 && !seed.empty(); ++m) {
      std::string s = seed;
      const int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits; ++e) {
        const size_t at = rng() % s.size();
        switch (rng() % 4) {
          case 0:
            s[at] = static_cast<char>(rng());
            break;
          case 1:
            s[at] ^= static_cast<char>(1u << (rng() % 8));
            break;
          case 2:
            s.insert(at, std::string(1 + rng() % 600, "[{\"0,:"[rng() % 6]));
            break;
          default:
            s.erase(at, 1 + rng() % 8);
            break;
        }
        if (s.empty()) break;
      }
      Run(s);
      ++runs;
    }
  }
  std::printf("replayed %zu seed(s), %zu input(s) in all: no crash\n", files.size(), runs);
  return 0;
}
