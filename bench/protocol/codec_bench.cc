// Encode/decode cost of the messages on the hot paths: a 1 MiB artifact
// chunk (gather) and a Dispatch carrying a program (fan-out). The baseline is
// a plain memcpy of the same bytes, measured in the same run.
#include <benchmark/benchmark.h>

#include <cstring>

#include "protocol/codec.h"

namespace dfx::protocol {
namespace {

Message Chunk() {
  ArtifactChunk c;
  c.transfer_id = 1;
  c.data.assign(kDefaultChunkBytes, 'x');
  return Message{Header{kProtocolVersion, 42, 0, 1}, c};
}

void BM_MemcpyBaseline1MiB(benchmark::State& state) {
  std::string src(kDefaultChunkBytes, 'x'), dst(kDefaultChunkBytes, '\0');
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), src.size());
    benchmark::DoNotOptimize(dst.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(src.size()));
}
BENCHMARK(BM_MemcpyBaseline1MiB);

void BM_EncodeChunk1MiB(benchmark::State& state) {
  Message m = Chunk();
  for (auto _ : state) benchmark::DoNotOptimize(Encode(m));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(kDefaultChunkBytes));
}
BENCHMARK(BM_EncodeChunk1MiB);

void BM_DecodeChunk1MiB(benchmark::State& state) {
  std::string bytes = *Encode(Chunk());
  for (auto _ : state) benchmark::DoNotOptimize(Decode(bytes));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(kDefaultChunkBytes));
}
BENCHMARK(BM_DecodeChunk1MiB);

void BM_EncodeDecodeDispatch(benchmark::State& state) {
  Dispatch d;
  d.program_name = "attn";
  d.program_json.assign(static_cast<size_t>(state.range(0)), ' ');
  Message m{Header{kProtocolVersion, 42, 0, 1}, d};
  for (auto _ : state) {
    auto bytes = Encode(m);
    benchmark::DoNotOptimize(Decode(*bytes));
  }
}
BENCHMARK(BM_EncodeDecodeDispatch)->Arg(4 << 10)->Arg(1 << 20);

}  // namespace
}  // namespace dfx::protocol

BENCHMARK_MAIN();
