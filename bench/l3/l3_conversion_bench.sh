#!/usr/bin/env bash
# The L3 run and its post-run swimlane conversion (issue 13's L3 row).
# Usage: bench/l3/l3_conversion_bench.sh [BUILD_DIR] [RANKS] [DISPATCHES] [TASKS] [REPEAT]
#        (default build-rel 8 10 10000 1)
#
# One layered DAG of TASKS tasks (dfx-gen-program), a plan that sends it to
# every rank DISPATCHES times, run by `dfx-coordinator run --launcher local`
# REPEAT times round-robin in three ways:
#   none      no collector (the baseline of the issue's row),
#   serial    all five collectors, --convert-jobs 1 (one dfx-view after another),
#   parallel  all five collectors, --convert-jobs 0 (one per core, the default).
# Wall time of each run, and the conversion's own time from the coordinator's
# log line ("converted N of M swimlane record file(s) in S s, J at a time").
# Prints the medians and, last, one line bench/run_all.sh reads:
#   l3: ranks=R dispatches=D tasks=T none_s=.. serial_s=.. serial_convert_s=..
#       parallel_s=.. parallel_convert_s=.. jobs=J share=.. speedup=..
# where share = parallel_convert_s / parallel_s (target <= 0.20) and
# speedup = serial_convert_s / parallel_convert_s.
set -euo pipefail
BUILD=${1:-build-rel}
RANKS=${2:-8}
DISPATCHES=${3:-10}
TASKS=${4:-10000}
REPEAT=${5:-1}
GEN="$BUILD/device/dfx-gen-program"
COORDINATOR="$BUILD/bin/dfx-coordinator"
source "$(dirname "$0")/../lib.sh"
bench_setup l3_conversion_bench "$GEN" "$COORDINATOR" "$BUILD/bin/dfx-view" "$BUILD/bin/dfx-rank-agent"

"$GEN" layered --tasks "$TASKS" --indent -1 -o "$WORK/program.json" 2>/dev/null
{
  printf '{"programs": {"p": "program.json"}, "steps": ['
  for ((d = 0; d < DISPATCHES; ++d)); do printf '%s{"program": "p", "ranks": "all"}' "$([[ $d -gt 0 ]] && echo ', ')"; done
  printf ']}\n'
} >"$WORK/plan.json"
ALL=(--enable-chip-swimlane --enable-dep-gen --enable-pmu --enable-scope-stats --dump-args 1)

# run_once MODE: prints "WALL CONVERT JOBS" (CONVERT and JOBS are 0 without a conversion).
run_once() {
  local flags=()
  case $1 in
    none) ;;
    serial) flags=("${ALL[@]}" --convert-jobs 1) ;;
    parallel) flags=("${ALL[@]}" --convert-jobs 0) ;;
  esac
  rm -rf "$WORK/w"
  local t0 t1 rc=0
  t0=$(date +%s.%N)
  "$COORDINATOR" run "$WORK/plan.json" --ranks "$RANKS" --launcher local --work-dir "$WORK/w" \
    --startup-timeout 600 --log-level info -q "${flags[@]}" >"$WORK/out.log" 2>"$WORK/err.log" || rc=$?
  t1=$(date +%s.%N)
  if ((rc != 0)); then
    echo "l3_conversion_bench: the $1 run failed (exit $rc):" >&2
    tail -20 "$WORK/err.log" "$WORK/out.log" >&2
    exit 1
  fi
  local conv
  conv=$(sed -nE 's/.*converted ([0-9]+) of ([0-9]+) swimlane record file\(s\) in ([0-9.]+) s, ([0-9]+) at a time.*/\1 \2 \3 \4/p' "$WORK/err.log" | tail -1)
  if [[ $1 != none ]]; then
    read -r done_n all_n secs jobs <<<"$conv"
    if [[ -z ${all_n:-} || $done_n != "$all_n" || $all_n != $((RANKS * DISPATCHES)) ]]; then
      echo "l3_conversion_bench: the $1 run converted '${conv}' (expected $((RANKS * DISPATCHES)) of $((RANKS * DISPATCHES)))" >&2
      exit 1
    fi
    awk -v a="$t0" -v b="$t1" -v s="$secs" -v j="$jobs" 'BEGIN { printf "%.3f %.3f %d\n", b - a, s, j }'
  else
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f 0 0\n", b - a }'
  fi
}

declare -A walls converts
JOBS=0
for ((i = 0; i < REPEAT; ++i)); do
  for mode in none serial parallel; do
    read -r wall conv jobs < <(run_once "$mode")
    walls[$mode]+="$wall "
    converts[$mode]+="$conv "
    [[ $mode == parallel ]] && JOBS=$jobs
    if [[ $mode == none ]]; then
      echo "run $((i + 1)) $mode: wall $wall s"
    else
      echo "run $((i + 1)) $mode: wall $wall s, conversion $conv s ($jobs at a time)"
    fi
  done
done
m() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | median; }
NONE=$(m "${walls[none]}") SERIAL=$(m "${walls[serial]}") PARALLEL=$(m "${walls[parallel]}")
SERIAL_CONV=$(m "${converts[serial]}") PARALLEL_CONV=$(m "${converts[parallel]}")
awk -v r="$RANKS" -v d="$DISPATCHES" -v t="$TASKS" -v n="$NONE" -v s="$SERIAL" -v sc="$SERIAL_CONV" \
  -v p="$PARALLEL" -v pc="$PARALLEL_CONV" -v j="$JOBS" 'BEGIN {
    printf "l3: ranks=%d dispatches=%d tasks=%d none_s=%.2f serial_s=%.2f serial_convert_s=%.2f serial_share=%.3f parallel_s=%.2f parallel_convert_s=%.2f jobs=%d share=%.3f speedup=%.2f\n",
      r, d, t, n, s, sc, (s > 0 ? sc / s : 0), p, pc, j, (p > 0 ? pc / p : 0), (pc > 0 ? sc / pc : 0) }'
