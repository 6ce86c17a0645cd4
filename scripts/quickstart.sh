#!/usr/bin/env bash
# Sets up a fresh machine, builds, and runs the main job on the embedded
# default: the 4-rank example plan on local agents driving emulated chips, with
# all five DFX collectors on. Artifacts land in ${WORK_DIR:-out/quickstart}/dfx_outputs/.
set -euo pipefail
cd "$(dirname "$0")/.."
SETUP_FOR=run scripts/setup.sh
export BUILD_DIR=${BUILD_DIR:-build}
# Only the three programs the run uses (and the libraries they link): the
# tests, fuzz drivers, benchmarks and the Python module are for
# scripts/test.sh, and building them tripled the time to the first verdict.
BUILD_TARGETS="dfx-coordinator dfx-rank-agent dfx-view" scripts/build.sh -DDFX_BUILD_BENCH=OFF
WORK_DIR=${WORK_DIR:-out/quickstart}
exec "$BUILD_DIR/bin/dfx-coordinator" run examples/plans/l3_four_ranks.json \
  --ranks 4 --launcher local --work-dir "$WORK_DIR" \
  --enable-chip-swimlane 4 --enable-dep-gen --dump-args 1 --enable-pmu 2 --enable-scope-stats
