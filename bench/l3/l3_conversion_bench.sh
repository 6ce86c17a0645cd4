#!/usr/bin/env bash
# The L3 run and its post-run swimlane conversion (bench/README.md, the L3 row).
# Usage: bench/l3/l3_conversion_bench.sh [BUILD_DIR] [RANKS] [DISPATCHES] [TASKS] [REPEAT]
#        (default build-rel 8 10 10000 1)
#
# One layered DAG of TASKS tasks (dfx-gen-program), a plan that sends it to
# every rank DISPATCHES times, run by `dfx-coordinator run --launcher local`
# REPEAT times round-robin in three ways:
#   none   no collector (the baseline of the issue's row),
#   eager  all five collectors, --swimlane-traces eager --convert-jobs 0: one
#          merged trace per dispatch after the run, one dfx-view per core at
#          a time (what every L3 run did before, and onboard runs still do),
#   lazy   all five collectors, the sim default (--swimlane-traces auto =
#          lazy): no conversion after the run; then, as a user would on
#          demand, `dfx-view swimlane --run W/dfx_outputs` writes the run-level trace
#          (timed on its own, not part of the run's wall).
# Wall time of each run, and the conversion's own time from the coordinator's
# log line ("converted N of M swimlane record file(s) in S s, J at a time").
# Prints the medians and, last, one line bench/run_all.sh reads:
#   l3: ranks=R dispatches=D tasks=T none_s=.. eager_s=.. eager_convert_s=..
#       jobs=J eager_share=.. lazy_s=.. lazy_convert_s=.. share=.. run_trace_s=..
#       lazy_ratio=..
# With DFX_AGENT_BEFORE=PATH (a dfx-rank-agent from before a change), each
# round also runs `lazy-before`: the lazy run with that agent
# (DFX_RANK_AGENT), right after `lazy`; its median wall is added to the last
# line as lazy_before_s=.. (the before/after check, interleaved). Likewise
# DFX_VIEW_BEFORE=PATH (a dfx-view from before a change): `lazy-before` runs
# with that dfx-view as the coordinator's post-run summary (DFX_VIEW); with
# both set, with both.
# where share = lazy_convert_s / lazy_s (the default's, target <= 0.20),
# eager_share = eager_convert_s / eager_s and lazy_ratio = lazy_s / none_s
# (the cost of all five collectors in the sim default, target <= 3).
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
  local agent=$BUILD/bin/dfx-rank-agent view=$BUILD/bin/dfx-view
  case $1 in
    none) ;;
    eager) flags=("${ALL[@]}" --swimlane-traces eager --convert-jobs 0) ;;
    lazy) flags=("${ALL[@]}") ;;
    lazy-before) flags=("${ALL[@]}") agent=${DFX_AGENT_BEFORE:-$agent} view=${DFX_VIEW_BEFORE:-$view} ;;
  esac
  rm -rf "$WORK/w"
  local t0 t1 rc=0
  t0=$(date +%s.%N)
  DFX_VIEW=$view DFX_RANK_AGENT=$agent "$COORDINATOR" run "$WORK/plan.json" --ranks "$RANKS" --launcher local --work-dir "$WORK/w" \
    --startup-timeout 600 --log-level info "${flags[@]}" >"$WORK/out.log" 2>"$WORK/err.log" || rc=$?
  t1=$(date +%s.%N)
  if ((rc != 0)); then
    echo "l3_conversion_bench: the $1 run failed (exit $rc):" >&2
    tail -20 "$WORK/err.log" "$WORK/out.log" >&2
    exit 1
  fi
  local conv
  conv=$(sed -nE 's/.*converted ([0-9]+) of ([0-9]+) swimlane record file\(s\) in ([0-9.]+) s, ([0-9]+) at a time.*/\1 \2 \3 \4/p' "$WORK/err.log" | tail -1)
  if [[ $1 == eager ]]; then
    read -r done_n all_n secs jobs <<<"$conv"
    if [[ -z ${all_n:-} || $done_n != "$all_n" || $all_n != $((RANKS * DISPATCHES)) ]]; then
      echo "l3_conversion_bench: the $1 run converted '${conv}' (expected $((RANKS * DISPATCHES)) of $((RANKS * DISPATCHES)))" >&2
      exit 1
    fi
    awk -v a="$t0" -v b="$t1" -v s="$secs" -v j="$jobs" 'BEGIN { printf "%.3f %.3f %d\n", b - a, s, j }'
  else
    if [[ -n $conv ]] || ls "$WORK"/w/dfx_outputs/rank*/d*/merged_swimlane_* >/dev/null 2>&1; then
      echo "l3_conversion_bench: the $1 run converted swimlane records after the run" >&2
      exit 1
    fi
    if [[ $1 == lazy* ]] && ! grep -q "swimlane traces: written on demand" "$WORK/out.log"; then
      echo "l3_conversion_bench: the lazy run did not say how to get the traces:" >&2
      cat "$WORK/out.log" >&2
      exit 1
    fi
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f 0 0\n", b - a }'
  fi
}

# run_trace: the lazy run's run-level trace on demand; prints its wall.
run_trace() {
  local t0 t1
  t0=$(date +%s.%N)
  "$BUILD/bin/dfx-view" swimlane --run "$WORK/w/dfx_outputs" -o "$WORK/run_trace.json" >/dev/null 2>"$WORK/view.log" || {
    echo "l3_conversion_bench: dfx-view swimlane --run failed:" >&2
    tail -20 "$WORK/view.log" >&2
    exit 1
  }
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }'
  rm -f "$WORK/run_trace.json"
}

MODES=(none eager lazy)
for before in DFX_AGENT_BEFORE DFX_VIEW_BEFORE; do
  [[ -z ${!before:-} || -x ${!before} ]] || { echo "l3_conversion_bench: $before=${!before} is not an executable" >&2; exit 2; }
done
[[ -n ${DFX_AGENT_BEFORE:-}${DFX_VIEW_BEFORE:-} ]] && MODES+=(lazy-before)
declare -A walls converts
JOBS=0
TRACES=""
for ((i = 0; i < REPEAT; ++i)); do
  for mode in "${MODES[@]}"; do
    read -r wall conv jobs < <(run_once "$mode")
    walls[$mode]+="$wall "
    converts[$mode]+="$conv "
    [[ $mode == eager ]] && JOBS=$jobs
    if [[ $mode == none ]]; then
      echo "run $((i + 1)) $mode: wall $wall s"
    elif [[ $mode == eager ]]; then
      echo "run $((i + 1)) $mode: wall $wall s, conversion $conv s ($jobs at a time)"
    elif [[ $mode == lazy-before ]]; then
      echo "run $((i + 1)) $mode: wall $wall s"
    else
      trace=$(run_trace)
      TRACES+="$trace "
      echo "run $((i + 1)) $mode: wall $wall s, no conversion; on demand: dfx-view swimlane --run $trace s"
    fi
  done
done
m() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | median; }
NONE=$(m "${walls[none]}") EAGER=$(m "${walls[eager]}") LAZY=$(m "${walls[lazy]}")
EAGER_CONV=$(m "${converts[eager]}") LAZY_CONV=$(m "${converts[lazy]}") TRACE=$(m "$TRACES")
awk -v r="$RANKS" -v d="$DISPATCHES" -v t="$TASKS" -v n="$NONE" -v e="$EAGER" -v ec="$EAGER_CONV" \
  -v l="$LAZY" -v lc="$LAZY_CONV" -v j="$JOBS" -v tr="$TRACE" 'BEGIN {
    printf "l3: ranks=%d dispatches=%d tasks=%d none_s=%.2f eager_s=%.2f eager_convert_s=%.2f jobs=%d eager_share=%.3f lazy_s=%.2f lazy_convert_s=%.2f share=%.3f run_trace_s=%.2f lazy_ratio=%.2f\n",
      r, d, t, n, e, ec, j, (e > 0 ? ec / e : 0), l, lc, (l > 0 ? lc / l : 0), tr, (n > 0 ? l / n : 0) }' |
  if [[ -n ${DFX_AGENT_BEFORE:-}${DFX_VIEW_BEFORE:-} ]]; then sed "s/\$/ lazy_before_s=$(printf %.2f "$(m "${walls[lazy-before]}")")/"; else cat; fi
