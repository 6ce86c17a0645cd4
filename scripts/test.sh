#!/usr/bin/env bash
# Sets up a fresh machine, builds with ASan+UBSan, and runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export BUILD_DIR=${BUILD_DIR:-build-asan}
scripts/build.sh -DDFX_SANITIZE=ON -DDFX_WERROR=ON -DDFX_BUILD_BENCH=OFF
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
ctest --test-dir "$BUILD_DIR" --output-on-failure -j 2 --timeout 300
