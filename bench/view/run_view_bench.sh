#!/usr/bin/env bash
# dfx-view benchmarks. Usage: bench/view/run_view_bench.sh [BUILD_DIR] [TASKS] [DAG_NODES]
#  1. swimlane converter on a generated TASKS-task (default 1 000 000) level-3
#     records file + deps.json: tasks/s, MB/s, peak RSS — against two baselines
#     measured in the same run: `cat FILE > /dev/null` and a tokenise-only pass
#     of the same streaming reader (no join, no output).
#  2. deps HTML for a DAG_NODES-node (default 10 000) DAG with --engine sfdp.
# Against a real run's inputs and the I/O floor: conversion_floor.sh.
# Generated inputs go to a temporary directory and are deleted afterwards.
set -euo pipefail
BUILD=${1:-build-rel}
N=${2:-1000000}
DAG_NODES=${3:-10000}
VIEW="$BUILD/bin/dfx-view"
BENCH="$BUILD/bench/view/view_bench"
WORK=$(mktemp -d /tmp/dfx_view_bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

"$BENCH" gen-records "$WORK/chip_swimlane_records.json" "$N" --deps "$WORK/deps.json"
SIZE_MB=$(du -m "$WORK/chip_swimlane_records.json" | cut -f1)
DEPS_MB=$(du -m "$WORK/deps.json" | cut -f1)
echo "input: $N tasks, records ${SIZE_MB} MB, deps.json ${DEPS_MB} MB"

echo "baseline cat > /dev/null:"
CAT=$("$BENCH" measure -- sh -c "cat '$WORK/chip_swimlane_records.json' > /dev/null" | tail -1)
echo "$CAT"
echo "baseline tokenise only (streaming reader, no conversion):"
"$BENCH" measure -- "$BENCH" tokenize "$WORK/chip_swimlane_records.json"
echo "dfx-view swimlane (no deps):"
OUT=$("$BENCH" measure -- "$VIEW" swimlane "$WORK/chip_swimlane_records.json" --deps-json "$WORK/none.json" -o "$WORK/trace_nodeps.json" 2>/dev/null | tail -1)
echo "$OUT"
echo "dfx-view swimlane (with deps.json, flows):"
OUT2=$("$BENCH" measure -- "$VIEW" swimlane "$WORK/chip_swimlane_records.json" -o "$WORK/trace.json" 2>/dev/null | tail -1)
echo "$OUT2"
TRACE_MB=$(du -m "$WORK/trace.json" | cut -f1)
# Peak RSS against the input read (records alone / records + deps.json).
for pair in "$OUT:$SIZE_MB:records" "$OUT2:$((SIZE_MB + DEPS_MB)):records+deps"; do
  R=$(echo "$pair" | sed -E 's/.*peak_rss_mb=([0-9.]+).*/\1/')
  IN=$(echo "$pair" | cut -d: -f2)
  awk -v r="$R" -v in_mb="$IN" -v what="$(echo "$pair" | cut -d: -f3)" 'BEGIN { printf "  peak RSS %.1f MB = %.1f%% of the %s input (%d MB)\n", r, 100 * r / in_mb, what, in_mb }'
done
for line in "$OUT" "$OUT2"; do
  S=$(echo "$line" | sed -E 's/.*wall_s=([0-9.]+).*/\1/')
  C=$(echo "$line" | sed -E 's/.*cpu_s=([0-9.]+).*/\1/')
  awk -v n="$N" -v s="$S" -v c="$C" -v mb="$SIZE_MB" 'BEGIN { printf "  -> %.0f tasks/s, %.1f MB/s of records input (wall); %.0f tasks/s per CPU-second\n", n / s, mb / s, n / c }'
done
S=$(echo "$OUT" | sed -E 's/.*wall_s=([0-9.]+).*/\1/')
B=$(echo "$CAT" | sed -E 's/.*wall_s=([0-9.]+).*/\1/')
awk -v s="$S" -v b="$B" 'BEGIN { printf "ratio: dfx-view swimlane (no deps) / cat of the records = %.1f (wall)\n", (b > 0 ? s / b : 0) }'
echo "trace with flows: ${TRACE_MB} MB"
rm -f "$WORK"/trace*.json

mkdir -p "$WORK/big"
"$BENCH" gen-deps "$WORK/big/deps.json" "$DAG_NODES"
echo "dfx-view deps --format html --engine sfdp ($DAG_NODES nodes):"
"$BENCH" measure -- "$VIEW" deps "$WORK/big/deps.json" --format html --engine sfdp -o "$WORK/big/deps.html" | tail -1
echo "  html: $(du -k "$WORK/big/deps.html" | cut -f1) KB"
