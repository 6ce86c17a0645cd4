#!/usr/bin/env bash
# What collection costs, measured honestly (paired rounds, bench/README.md): the same
# program run by `dfx-rank-agent exec` (the L2 run, no coordinator, no
# post-run conversion) ROUNDS times round-robin in five ways:
#   none        no collector (the baseline)
#   swimlane1   --enable-chip-swimlane 1
#   swimlane2   --enable-chip-swimlane 2
#   swimlane4   --enable-chip-swimlane 4
#   all5        swimlane 4, dep_gen, PMU, scope stats and args dump level 1
# Each run gives three figures: its makespan from the emulator's own accounting
# (first block dispatched to last retired, on the chip clock: printed by every
# run, collectors or not), its process wall time and its CPU time (user +
# system; less disturbed than the wall by other load on a shared machine).
# Prints min and median of makespan and wall and the median CPU per way, the
# median ratios against `none`, the median of the per-round wall ratios
# ("paired": each way against `none` of the same round), two parts of the
# cost as shares of the same round's `none` wall (medians over the rounds):
#   in run   the makespan the way adds over `none` (collection inside the
#            run, before any export);
#   writes   the write floor: dd writing as many bytes as the way's
#            artifacts into the same file system, timed by dd (no start-up);
# and last one line per way that bench/run_all.sh reads:
#   perturbation: way=W tasks=T rounds=R makespan_ratio=.. wall_ratio=.. paired_wall_ratio=.. cpu_ratio=..
#     run_share=.. write_floor_share=.. artifact_mb=..
# Threads are not pinned: the emulator's 1 orchestrator + AICPU + 6 core
# threads outnumber this machine's 2 cores, so pinning would only serialise
# them; run it on an idle machine and read the min beside the median.
# With DFX_AGENT_BEFORE=PATH (e.g. a dfx-rank-agent copied from before a
# change), each round also runs every way with that agent (`none-before`,
# `swimlane1-before`, ..., `all5-before`) right after the same way with this
# one, so a change to the collectors is measured against the previous one in
# the same run; a `-before` way's ratios are against `none-before`.
# Usage: bench/perturbation/perturbation_bench.sh [BUILD_DIR] [TASKS] [ROUNDS]
#        (default build-rel 100000 5)
set -euo pipefail
BUILD=${1:-build-rel}
TASKS=${2:-100000}
ROUNDS=${3:-5}
GEN="$BUILD/device/dfx-gen-program"
AGENT="$BUILD/bin/dfx-rank-agent"
source "$(dirname "$0")/../lib.sh"
bench_setup perturbation_bench "$GEN" "$AGENT"

"$GEN" layered --tasks "$TASKS" --indent -1 -o "$WORK/program.json" 2>/dev/null
WAYS=(none swimlane1 swimlane2 swimlane4 all5)
if [[ -n ${DFX_AGENT_BEFORE:-} ]]; then
  [[ -x $DFX_AGENT_BEFORE ]] || { echo "perturbation_bench: DFX_AGENT_BEFORE=$DFX_AGENT_BEFORE is not an executable" >&2; exit 2; }
  # Interleaved: each way, then the same way with the previous agent.
  WAYS=(none none-before swimlane1 swimlane1-before swimlane2 swimlane2-before swimlane4
    swimlane4-before all5 all5-before)
fi
flags_of() {
  case ${1%-before} in
    none) ;;
    swimlane1) echo --enable-chip-swimlane 1 ;;
    swimlane2) echo --enable-chip-swimlane 2 ;;
    swimlane4) echo --enable-chip-swimlane 4 ;;
    all5) echo --enable-chip-swimlane 4 --enable-dep-gen --enable-pmu 2 --enable-scope-stats --dump-args 1 ;;
  esac
}

# run_once WAY: appends "MAKESPAN_US WALL_S CPU_S FLOOR_S BYTES" to
# $WORK/WAY.txt (CPU_S: the process's user + system time, which other load
# on the machine disturbs less than the wall; FLOOR_S: writing BYTES, the
# size of the run's artifacts, see below).
run_once() {
  local way=$1 out="$WORK/out_$1" times line
  rm -rf "$out"
  local agent=$AGENT
  [[ $way == *-before ]] && agent=$DFX_AGENT_BEFORE
  # bash's `time` keyword reports real, user and system seconds of the agent.
  # shellcheck disable=SC2046 # the flags split into words on purpose
  times=$( { TIMEFORMAT='%3R %3U %3S'; time "$agent" exec --program "$WORK/program.json" \
    --output-dir "$out" --log-level error $(flags_of "$way") >"$WORK/stdout" 2>"$WORK/stderr"; } 2>&1) ||
    { echo "perturbation_bench: way $way failed:" >&2; cat "$WORK/stderr" >&2; exit 1; }
  line=$(head -1 "$WORK/stdout")
  local makespan
  makespan=$(sed -nE 's/.*makespan ([0-9.]+) us.*/\1/p' <<<"$line")
  [[ -n $makespan ]] || { echo "perturbation_bench: no makespan in: $line" >&2; exit 1; }
  # The write floor: writing as many bytes as this run's artifacts into the
  # same file system, timed by dd itself (its start-up left out). A way with
  # no artifact (none) writes nothing.
  local bytes=0 floor=0
  [[ -d $out ]] && bytes=$(find "$out" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
  if ((bytes > 0)); then
    rm -f "$WORK/floor.bin"
    floor=$(LC_ALL=C dd if=/dev/zero of="$WORK/floor.bin" bs=1M iflag=count_bytes count="$bytes" 2>&1 |
      sed -nE 's/.* copied, ([0-9.e-]+) s,.*/\1/p')
    rm -f "$WORK/floor.bin"
    [[ -n $floor ]] || { echo "perturbation_bench: dd printed no time for $bytes bytes" >&2; exit 1; }
  fi
  echo "$makespan $(awk '{ printf "%.3f %.3f", $1, $2 + $3 }' <<<"$times") $floor $bytes" >>"$WORK/$way.txt"
}

for ((r = 0; r < ROUNDS; ++r)); do
  for way in "${WAYS[@]}"; do run_once "$way"; done
done

col() { awk -v c="$2" '{ print $c }' "$WORK/$1.txt"; }
min() { sort -g | head -1; }
div() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (b > 0) ? a / b : 0 }'; }
# share WAY BASE EXPR: the median over rounds of EXPR (awk, over WAY's row
# in $1.., BASE's row of the same round in $6..) divided by BASE's wall in
# that round. Paired so: a round runs every way back to back, so a slow
# stretch of the machine moves both sides of each pair, where it moves only
# one side of a ratio of medians. With EXPR '$2' it is WAY's paired wall
# ratio.
share() {
  paste -d' ' "$WORK/$1.txt" "$WORK/$2.txt" | awk "\$7 > 0 { printf \"%.4f\\n\", ($3) / \$7 }" | median |
    awk '{ printf "%.3f", $1 }'
}
printf '%-11s %14s %14s %10s %10s %10s %9s %9s %9s %9s %8s %8s %9s\n' way "makespan min" "makespan med" "wall min" "wall med" \
  "cpu med" "ms ratio" "wall ratio" "paired" "cpu ratio" "in run" "writes" "artifacts"
summary=()
for way in "${WAYS[@]}"; do
  ms_min=$(col "$way" 1 | min)
  ms_med=$(col "$way" 1 | median)
  w_min=$(col "$way" 2 | min)
  w_med=$(col "$way" 2 | median)
  c_med=$(col "$way" 3 | median)
  base=none
  [[ $way == *-before ]] && base=none-before
  # What collection costs inside the run (the makespan over the same
  # round's none, on the chip clock) and what writing its artifacts' bytes
  # costs on its own, each as a share of none's process wall.
  run_share=$(share "$way" "$base" '($1 - $6) / 1e6')
  floor_share=$(share "$way" "$base" '$4')
  w_paired=$(share "$way" "$base" '$2')
  mbytes=$(col "$way" 5 | median | awk '{ printf "%.1f", $1 / 1e6 }')
  ms_ratio=$(div "$ms_med" "$(col "$base" 1 | median)")
  w_ratio=$(div "$w_med" "$(col "$base" 2 | median)")
  c_ratio=$(div "$c_med" "$(col "$base" 3 | median)")
  printf '%-11s %11.1f us %11.1f us %8.3f s %8.3f s %8.3f s %8sx %8sx %8sx %8sx %7s%% %7s%% %6s MB\n' "$way" "$ms_min" "$ms_med" \
    "$w_min" "$w_med" "$c_med" "$ms_ratio" "$w_ratio" "$w_paired" "$c_ratio" \
    "$(awk -v r="$run_share" 'BEGIN { printf "%+.1f", 100 * r }')" \
    "$(awk -v r="$floor_share" 'BEGIN { printf "%+.1f", 100 * r }')" "$mbytes"
  summary+=("perturbation: way=$way tasks=$TASKS rounds=$ROUNDS makespan_ratio=$ms_ratio wall_ratio=$w_ratio paired_wall_ratio=$w_paired cpu_ratio=$c_ratio run_share=$run_share write_floor_share=$floor_share artifact_mb=$mbytes")
done
printf '%s\n' "${summary[@]}"
