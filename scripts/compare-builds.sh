#!/usr/bin/env bash
# Runs two builds of dfx on the same inputs and compares every artifact and
# every viewer output byte for byte: a refactoring that changes no behaviour
# leaves nothing to report.
#
#   scripts/compare-builds.sh BEFORE_BUILD AFTER_BUILD [OUT_DIR]
#
# BEFORE_BUILD and AFTER_BUILD are build trees (or copies of them) holding
# bin/dfx-coordinator, bin/dfx-rank-agent, bin/dfx-view and
# device/dfx-gen-program. Inputs: the committed example programs and a
# generated 100k-task layered program (DFX_COMPARE_TASKS sets its size), at
# swimlane levels 1-4 with the other four collectors on (dump levels and PMU
# event types vary across the levels), one onboard run, and the committed
# 4-rank plan at L3; every run uses --virtual-clock, so its timestamps are
# exact and repeatable. Each L2 output is fed to every dfx-view subcommand
# (swimlane as JSON, proto and with --overhead; deps text and HTML; dump;
# scope-stats; sched-overhead; pmu; summary; export).
#
# Both sides run in the same work directory (names inside artifacts repeat
# it), one after the other. What differs on purpose between two runs is
# normalised first: merged_swimlane_<time>.json is renamed, the run
# manifest's session id, times, hosts and pids are masked, and so is the
# build directory in what the coordinator prints.
# Exit status: 0 identical, 1 something differs (listed), 2 usage error.
set -euo pipefail
if (($# < 2)); then
  sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
BEFORE=$(realpath "$1") AFTER=$(realpath "$2")
OUT=$(realpath -m "${3:-${TMPDIR:-/tmp}/dfx_compare}")
TASKS=${DFX_COMPARE_TASKS:-100000}
for b in "$BEFORE" "$AFTER"; do
  for f in bin/dfx-coordinator bin/dfx-rank-agent bin/dfx-view device/dfx-gen-program; do
    [[ -x $b/$f ]] || { echo "compare-builds.sh: no $b/$f" >&2; exit 2; }
  done
done
cd "$(dirname "$0")/.."
EXAMPLES=$PWD/examples
rm -rf "$OUT"
mkdir -p "$OUT/inputs"
"$BEFORE/device/dfx-gen-program" layered --tasks "$TASKS" --width 32 --seed 7 \
  -o "$OUT/inputs/large_dag.json"
PROGRAMS=("$EXAMPLES/vector_pipeline.json" "$EXAMPLES/attention_decode.json"
  "$EXAMPLES/large_dag_2k.json" "$OUT/inputs/large_dag.json")

# view SIDE_BUILD DIR: every viewer on one L2 dfx_outputs directory, each
# writing into DIR/view/.
view() {
  local v=$1/bin/dfx-view d=$2 o=$2/view
  mkdir -p "$o"
  local rec=$d/chip_swimlane_records.json
  {
    "$v" swimlane "$rec" -o "$o/trace.json"
    "$v" swimlane "$rec" --format proto -o "$o/trace.pftrace"
    "$v" swimlane "$rec" --overhead -o "$o/trace_overhead.json"
    "$v" deps "$d/deps.json" -o "$o/deps.txt"
    if (($(stat -c %s "$d/deps.json") < 1000000)); then
      "$v" deps "$d/deps.json" --format html -o "$o/deps.html"
    fi
    "$v" sched-overhead --chip-swimlane-records-json "$rec" >"$o/sched_overhead.txt"
    "$v" pmu "$d/pmu.csv" >"$o/pmu.txt"
    "$v" scope-stats "$d/scope_stats/scope_stats.jsonl" --out-dir "$o/scope"
    "$v" summary "$d" >"$o/summary.txt"
    "$v" summary "$d" --format json >"$o/summary.json"
    "$v" export "$d" -o "$o/tasks.csv"
    if [[ -d $d/args_dump ]]; then
      "$v" dump "$d/args_dump" >"$o/dump.txt"
    fi
  } >"$o/stdout.txt" 2>"$o/stderr.txt" || echo "view failed in $d" >>"$o/stderr.txt"
  # Log lines carry the time of day.
  sed -i -E 's/^\[[0-9: .-]+\] //' "$o/stderr.txt"
}

# normalise DIR: what differs between any two runs on purpose.
normalise() {
  local d=$1
  find "$d" -name 'merged_swimlane_*.json' -exec sh -c 'mv "$1" "$(dirname "$1")/merged_swimlane_TIME.json"' _ {} \;
  find "$d" \( -name run_manifest.json -o -name .session.json \) -exec \
    sed -i -E 's/"([a-z_]*_ns|[a-z_]*pid|endpoint|bind|session_id|session|host|[a-z_]*_at)": ("[^"]*"|[0-9.e+-]+)/"\1": X/g' {} \;
  find "$d" \( -name README.txt -o -name run_manifest.json \) -exec sed -i -E 's/[0-9]{8}_[0-9]{6}/TIME/g' {} \;
}

# side NAME BUILD: every run of one build into $OUT/NAME.
side() {
  local name=$1 b=$2 w=$OUT/w
  local c=$b/bin/dfx-coordinator
  mkdir -p "$OUT/$name"
  local i=0
  local dumps=(1 2 3 1) pmus=(2 4 1 7)
  for p in "${PROGRAMS[@]}"; do
    for level in 1 2 3 4; do
      local dump=${dumps[$((level - 1))]}
      # Full dumps of the large program are gigabytes: level 1 there.
      [[ $p == "$OUT/inputs/large_dag.json" ]] && dump=1
      rm -rf "$w"
      "$c" run "$p" --work-dir "$w" --virtual-clock --log-level warn \
        --enable-chip-swimlane "$level" --enable-dep-gen --dump-args "$dump" \
        --enable-pmu "${pmus[$((level - 1))]}" --enable-scope-stats \
        >"$OUT/$name/l2_$i.stdout" 2>"$OUT/$name/l2_$i.stderr" || echo "exit $?" >>"$OUT/$name/l2_$i.stderr"
      view "$b" "$w/dfx_outputs"
      normalise "$w"
      mv "$w" "$OUT/$name/l2_${i}_$(basename "$p" .json)_L$level"
      i=$((i + 1))
    done
  done
  rm -rf "$w"
  "$c" run "$EXAMPLES/attention_decode.json" --work-dir "$w" --virtual-clock --log-level warn \
    --execution-mode onboard --enable-chip-swimlane 4 --enable-dep-gen --dump-args 1 \
    --enable-pmu 2 --enable-scope-stats >"$OUT/$name/onboard.stdout" 2>"$OUT/$name/onboard.stderr" || true
  normalise "$w"
  mv "$w" "$OUT/$name/onboard"
  for level in 1 4; do
    rm -rf "$w"
    "$c" run "$EXAMPLES/plans/l3_four_ranks.json" --ranks 4 --launcher local --work-dir "$w" \
      --virtual-clock --log-level error --enable-chip-swimlane "$level" --enable-dep-gen \
      --dump-args 1 --enable-pmu 2 --enable-scope-stats --swimlane-traces eager \
      >"$OUT/$name/l3_L$level.stdout" 2>"$OUT/$name/l3_L$level.stderr" || true
    # The viewers read the first side's run: its clock offsets are its own.
    local first=$OUT/raw/l3_L$level
    if [[ $name == before ]]; then
      mkdir -p "$OUT/raw"
      cp -a "$w/dfx_outputs" "$first"
    fi
    "$b/bin/dfx-view" summary "$first" >"$OUT/$name/l3_L$level.summary" 2>&1 || true
    "$b/bin/dfx-view" swimlane --run "$first" -o "$OUT/$name/l3_L$level.run_trace.json" \
      >/dev/null 2>&1 || true
    normalise "$w"
    mv "$w" "$OUT/$name/l3_L$level"
  done
  # Console lines and README.txt name the session, the time and the build
  # directory the coordinator found dfx-view in: masked.
  find "$OUT/$name" -name README.txt -exec sed -i "s|$b/|BUILD/|g" {} +
  sed -i -E "s|$b/|BUILD/|g"'; s/[0-9a-f]{16}/SESSION/g; s/[0-9]{8}_[0-9]{6}/TIME/g; s/[0-9]+(\.[0-9]+)? ?(ms|s)\b/T/g; s/^\[[0-9: .-]+\] //' \
    "$OUT/$name"/*.stdout "$OUT/$name"/*.stderr
}

echo "compare-builds: before ($BEFORE)" >&2
side before "$BEFORE"
echo "compare-builds: after ($AFTER)" >&2
side after "$AFTER"
if diff -r -q "$OUT/before" "$OUT/after" >"$OUT/diff.txt"; then
  echo "compare-builds: identical ($(find "$OUT/before" -type f | wc -l) files, $(du -sh "$OUT/before" | cut -f1))"
  exit 0
fi
echo "compare-builds: differences ($OUT/diff.txt):"
head -50 "$OUT/diff.txt"
exit 1
