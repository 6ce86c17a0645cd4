#!/usr/bin/env bash
# The swimlane converter against the I/O floor, on real inputs.
# Usage: bench/view/conversion_floor.sh [BUILD_DIR] [TASKS] [LEVEL] [REPEAT]
#
#  1. A real L2 run writes the inputs: a layered DAG of TASKS tasks
#     (dfx-gen-program) run with --chip-swimlane-level LEVEL --enable-dep-gen,
#     so chip_swimlane_records.json and deps.json are what dep_gen really
#     writes (not a synthetic deps.json).
#  2. REPEAT paired runs, each: the floor — `cat` of the inputs to /dev/null
#     plus writing as many bytes as the converter's output (head -c of
#     /dev/zero into the same directory) — then `dfx-view swimlane` of the
#     same inputs (with deps.json, flow arrows and the name map, as the
#     coordinator runs it). Wall time and the child's peak RSS (wait4).
#     Each pair also converts the same inputs with --format proto (the
#     Perfetto protobuf trace): its wall, CPU, peak RSS and size against the
#     JSON trace's (proto_ratio is proto / the same floor, size_ratio its
#     bytes / the JSON trace's bytes).
#  3. The medians, and the median of the per-pair ratio converter / floor,
#     on one last line that bench/run_all.sh reads:
#       conversion: tasks=N level=L ... floor_s=F convert_s=C ... ratio=R
#         proto_s=P proto_cpu_s=.. proto_peak_rss_mb=.. proto_mb=.. size_ratio=S
#         proto_ratio=..
# With DFX_VIEW_BEFORE=PATH (another dfx-view, e.g. a copy of one built
# before a change) each pair also times that one on the same inputs, checks
# its trace is byte-identical, and the last line adds before_s=,
# before_cpu_s= and before_ratio= (its median ratio to the floor).
# Generated files go to a temporary directory and are deleted afterwards.
set -euo pipefail
BUILD=${1:-build-rel}
N=${2:-100000}
LEVEL=${3:-2}
REPEAT=${4:-3}
VIEW=${DFX_VIEW:-$BUILD/bin/dfx-view}  # DFX_VIEW: compare another dfx-view on the same inputs
BENCH="$BUILD/bench/view/view_bench"
GEN="$BUILD/device/dfx-gen-program"
COORDINATOR="$BUILD/bin/dfx-coordinator"
source "$(dirname "$0")/../lib.sh"
bench_setup conversion_floor "$VIEW" "$BENCH" "$GEN" "$COORDINATOR"

"$GEN" layered --tasks "$N" --indent -1 -o "$WORK/program.json" >/dev/null
"$COORDINATOR" run "$WORK/program.json" --work-dir "$WORK/run" --chip-swimlane-level "$LEVEL" \
  --enable-dep-gen --log-level warn -q >/dev/null
OUT_DIR="$WORK/run/dfx_outputs"
RECORDS="$OUT_DIR/chip_swimlane_records.json"
DEPS="$OUT_DIR/deps.json"
NAME_MAP=$(ls "$OUT_DIR"/name_map_*.json)
rm -f "$OUT_DIR"/merged_swimlane_*.json  # the run's own conversion; ours is timed below
TRACE="$OUT_DIR/trace.json"
PROTO="$OUT_DIR/trace.pftrace"
FLOOR_OUT="$OUT_DIR/floor.out"

field() { sed -E "s/.*$1=([0-9.]+).*/\1/" <<<"$2"; }

floors=() converts=() cpus=() rss=() ratios=() befores=() before_cpus=() before_ratios=()
protos=() proto_cpus=() proto_rss=() proto_ratios=()
for ((i = 0; i < REPEAT; ++i)); do
  # The converter first, so the floor knows how many bytes the output has.
  C=$("$BENCH" measure -- "$VIEW" swimlane "$RECORDS" -o "$TRACE" --func-names "$NAME_MAP" 2>/dev/null | tail -1)
  [[ $(field exit "$C") == 0 && -s $TRACE ]] || { echo "conversion_floor: dfx-view failed: $C" >&2; exit 1; }
  BYTES=$(stat -c %s "$TRACE")
  if [[ -n ${DFX_VIEW_BEFORE:-} ]]; then
    P=$("$BENCH" measure -- "$DFX_VIEW_BEFORE" swimlane "$RECORDS" -o "$TRACE.before" --func-names "$NAME_MAP" 2>/dev/null | tail -1)
    cmp -s "$TRACE" "$TRACE.before" || { echo "conversion_floor: $DFX_VIEW_BEFORE wrote another trace" >&2; exit 1; }
    rm -f "$TRACE.before"
    befores+=("$(field wall_s "$P")") before_cpus+=("$(field cpu_s "$P")")
  fi
  rm -f "$TRACE"
  Q=$("$BENCH" measure -- "$VIEW" swimlane "$RECORDS" --format proto -o "$PROTO" --func-names "$NAME_MAP" 2>/dev/null | tail -1)
  [[ $(field exit "$Q") == 0 && -s $PROTO ]] || { echo "conversion_floor: dfx-view --format proto failed: $Q" >&2; exit 1; }
  PROTO_BYTES=$(stat -c %s "$PROTO")
  rm -f "$PROTO"
  protos+=("$(field wall_s "$Q")") proto_cpus+=("$(field cpu_s "$Q")") proto_rss+=("$(field peak_rss_mb "$Q")")
  F=$("$BENCH" measure -- sh -c "cat '$RECORDS' '$DEPS' > /dev/null && head -c $BYTES /dev/zero > '$FLOOR_OUT'" | tail -1)
  rm -f "$FLOOR_OUT"
  floors+=("$(field wall_s "$F")") converts+=("$(field wall_s "$C")")
  cpus+=("$(field cpu_s "$C")") rss+=("$(field peak_rss_mb "$C")")
  ratios+=("$(awk -v c="${converts[-1]}" -v f="${floors[-1]}" 'BEGIN { printf "%.3f", (f > 0 ? c / f : 0) }')")
  proto_ratios+=("$(awk -v c="${protos[-1]}" -v f="${floors[-1]}" 'BEGIN { printf "%.3f", (f > 0 ? c / f : 0) }')")
  echo "pair $((i + 1)): floor ${floors[-1]} s, dfx-view swimlane ${converts[-1]} s (cpu ${cpus[-1]} s, peak RSS ${rss[-1]} MB), ratio ${ratios[-1]}; --format proto ${protos[-1]} s (cpu ${proto_cpus[-1]} s, peak RSS ${proto_rss[-1]} MB)${DFX_VIEW_BEFORE:+; before: ${befores[-1]} s (cpu ${before_cpus[-1]} s)}"
  if [[ -n ${DFX_VIEW_BEFORE:-} ]]; then
    before_ratios+=("$(awk -v c="${befores[-1]}" -v f="${floors[-1]}" 'BEGIN { printf "%.3f", (f > 0 ? c / f : 0) }')")
  fi
done
MB() { awk -v b="$(stat -c %s "$1")" 'BEGIN { printf "%.1f", b / 1048576 }'; }
echo "conversion: tasks=$N level=$LEVEL records_mb=$(MB "$RECORDS") deps_mb=$(MB "$DEPS")" \
  "trace_mb=$(awk -v b="$BYTES" 'BEGIN { printf "%.1f", b / 1048576 }')" \
  "floor_s=$(printf '%s\n' "${floors[@]}" | median) convert_s=$(printf '%s\n' "${converts[@]}" | median)" \
  "convert_cpu_s=$(printf '%s\n' "${cpus[@]}" | median) peak_rss_mb=$(printf '%s\n' "${rss[@]}" | median)" \
  "ratio=$(printf '%s\n' "${ratios[@]}" | median)" \
  "proto_s=$(printf '%s\n' "${protos[@]}" | median) proto_cpu_s=$(printf '%s\n' "${proto_cpus[@]}" | median)" \
  "proto_peak_rss_mb=$(printf '%s\n' "${proto_rss[@]}" | median)" \
  "proto_mb=$(awk -v b="$PROTO_BYTES" 'BEGIN { printf "%.1f", b / 1048576 }')" \
  "size_ratio=$(awk -v p="$PROTO_BYTES" -v j="$BYTES" 'BEGIN { printf "%.3f", (j > 0 ? p / j : 0) }')" \
  "proto_ratio=$(printf '%s\n' "${proto_ratios[@]}" | median)" \
  ${DFX_VIEW_BEFORE:+"before_s=$(printf '%s\n' "${befores[@]}" | median) before_cpu_s=$(printf '%s\n' "${before_cpus[@]}" | median) before_ratio=$(printf '%s\n' "${before_ratios[@]}" | median)"}
