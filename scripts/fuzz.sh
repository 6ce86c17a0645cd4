#!/usr/bin/env bash
# Builds the fuzz targets (tests/fuzz) with clang + libFuzzer + ASan/UBSan into
# ${BUILD_DIR:-build-fuzz} and runs each for FUZZ_SECONDS (default 20: the CI
# smoke). A crash fails the script and leaves its reproducer (crash-<sha1>)
# in the current directory; tests/fuzz/README.md says how to replay it.
#   FUZZ_SECONDS=3600 scripts/fuzz.sh            # a long run of every target
#   FUZZ_SECONDS=600 scripts/fuzz.sh fuzz_plan   # one target
set -euo pipefail
cd "$(dirname "$0")/.."
export BUILD_DIR=${BUILD_DIR:-build-fuzz}
export CC=${CC:-clang-14} CXX=${CXX:-clang++-14}
seconds=${FUZZ_SECONDS:-20}
# -O1 with line tables, as the sanitizer test build (scripts/test.sh): fast to
# compile, and every report still has file and line.
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDFX_FUZZ=ON \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
  -DDFX_BUILD_BENCH=OFF -DDFX_FUZZ_SECONDS="$seconds" \
  $(command -v ccache >/dev/null && echo -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache) \
  >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)" --target dfx_fuzz_targets
targets=("$@")
if ((${#targets[@]} == 0)); then targets=(fuzz_protocol fuzz_program fuzz_plan fuzz_run_config fuzz_deps fuzz_swimlane fuzz_args_dump); fi
regex=$(IFS='|'; echo "${targets[*]}")
ctest --test-dir "$BUILD_DIR" -L fuzz -R "^(${regex})_smoke$" --output-on-failure -j "$(nproc)" \
  --timeout $((seconds + 120))
