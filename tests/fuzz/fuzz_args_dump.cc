// Fuzz target: an args dump manifest (args_dump.json, docs/formats.md §8.2)
// beside a 256-byte args.bin: collectors::ReadArgsDumpManifest, then
// ArgsDumpBin::Read of every entry. Hostile types must be refused by name
// (never thrown or cast), and no entry may read (or allocate) past the end
// of args.bin: each Read either returns exactly bin_size bytes or an error.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "collectors/args_dump/args_dump_reader.h"

namespace {

namespace fs = std::filesystem;

constexpr size_t kBinBytes = 256;

const fs::path& Dir() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("fuzz_args_dump_" + std::to_string(::getpid()));
    fs::create_directories(d);
    std::ofstream bin(d / "args.bin", std::ios::binary | std::ios::trunc);
    const std::string bytes(kBinBytes, '\x5a');
    bin.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    std::atexit([] { fs::remove_all(Dir()); });
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fs::path path = Dir() / "args_dump.json";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!out.flush()) std::abort();
  }
  auto manifest = dfx::collectors::ReadArgsDumpManifest(path);
  if (!manifest.ok()) {
    if (manifest.status().message().find(path.string()) == std::string::npos) {
      std::fprintf(stderr, "an error that does not name the file: %s\n",
                   manifest.status().message().c_str());
      std::abort();
    }
    return 0;
  }
  dfx::collectors::ArgsDumpManifest m = *manifest;
  m.bin_file = "args.bin";  // whatever the input named: always the fixed file
  dfx::collectors::ArgsDumpBin bin;
  bin.Open(Dir(), m);
  if (!bin.is_open()) std::abort();
  for (const auto& entry : m.args) {
    auto read = bin.Read(entry);
    const bool fits = entry.bin_offset >= 0 && entry.bin_size >= 0 &&
                      static_cast<uint64_t>(entry.bin_offset) <= kBinBytes &&
                      static_cast<uint64_t>(entry.bin_size) <=
                          kBinBytes - static_cast<uint64_t>(entry.bin_offset);
    if (read.ok() != fits) {
      std::fprintf(stderr, "offset %lld size %lld: read %s\n",
                   static_cast<long long>(entry.bin_offset), static_cast<long long>(entry.bin_size),
                   read.ok() ? "ok" : "failed");
      std::abort();
    }
    if (read.ok() && read->size() != static_cast<size_t>(entry.bin_size)) std::abort();
  }
  return 0;
}
