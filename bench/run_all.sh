#!/usr/bin/env bash
# Runs every benchmark that has a row in bench/README.md's table and prints that
# table once: what / baseline (measured in the same run) / measured / ratio /
# target / met?. A row whose benchmark does not exist yet says "not measured"
# rather than a figure from somewhere else. Builds nothing: point it at a
# build tree made with -DDFX_BUILD_BENCH=ON (Release for figures to quote).
#
# Usage: bench/run_all.sh [--tiny] [--million] [BUILD_DIR]   (default build-rel)
#   --tiny     every benchmark at a tiny size, once (the CTest smoke
#              bench_run_all_tiny): proves each runs and prints its ratio;
#              the figures and the met? column mean nothing at that size.
#   --million  also the 1M-task conversion rows (a real 1M-task run per
#              level: minutes, and ~2 GB in $TMPDIR).
# Exit status: 0 when every benchmark ran, 1 when one failed (its log is
# printed), 2 for a usage error. Whether a target is met does not change it.
set -uo pipefail
cd "$(dirname "$0")/.."
TINY=0 MILLION=0 BUILD=build-rel
for arg in "$@"; do
  case $arg in
    --tiny) TINY=1 ;;
    --million) MILLION=1 ;;
    -h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "run_all.sh: unknown option $arg" >&2; exit 2 ;;
    *) BUILD=$arg ;;
  esac
done
[[ -x $BUILD/bin/dfx-coordinator ]] || { echo "run_all.sh: no $BUILD/bin/dfx-coordinator (build first)" >&2; exit 2; }
LOGS=$(mktemp -d "${TMPDIR:-/tmp}/dfx_run_all.XXXXXX")
trap 'rm -rf "$LOGS"' EXIT

if ((TINY)); then
  CONV_TASKS=2000 CONV_REPEAT=1 GATHER=(--agents 2 --sizes 1 --reps 1)
  RTT=(--agents 2 --dispatches 2 --dump-elems 1024 --repeat 2) DEVICE=(--tasks 2000 --repeat 1)
  RTT_AGENTS=2 L3=(2 2 200 1) PERTURB=(500 1)
else
  CONV_TASKS=100000 CONV_REPEAT=3 GATHER=(--agents 4 --sizes 256 --reps 3)
  RTT=(--agents 64 --dispatches 10 --repeat 5) DEVICE=(--tasks 100000 --repeat 3)
  RTT_AGENTS=64 L3=(8 10 10000 1) PERTURB=(100000 25)
fi

FAILED=0
# run NAME CMD...: runs one benchmark into $LOGS/NAME.log; on failure prints
# the log to stderr and returns 1. Each starts once the page cache's dirty
# data is written back (sync): the 1M-task conversions leave ~10 GB of
# traces behind them, and their writeback should not run under the
# benchmarks after them (the collector row writes 160 MB per round).
run() {
  local name=$1
  shift
  sync
  echo "running $name: $*" >&2
  if ! "$@" >"$LOGS/$name.log" 2>&1; then
    echo "run_all.sh: $name FAILED ($*):" >&2
    cat "$LOGS/$name.log" >&2
    FAILED=1
    return 1
  fi
}
field() { sed -nE "s/.*[ ]$1=([0-9.]+).*/\1/p" "$2" | tail -1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "?" }'; }
# met VALUE OP LIMIT: "yes" / "no"
met() { awk -v v="$1" -v l="$3" -v op="$2" 'BEGIN { ok = (op == "<=") ? v <= l : v >= l; print ok ? "yes" : "no" }'; }

ROWS=()
row() { ROWS+=("$1|$2|$3|$4|$5|$6"); }
NOT="not measured"

# Conversion (rows 1-4): real inputs from a real run; the reference
# converter is not available here, so only the floor row has a baseline.
conversion() {  # conversion NAME TASKS LEVEL
  run "$1" bench/view/conversion_floor.sh "$BUILD" "$2" "$3" "$CONV_REPEAT"
}
for level in 2 4; do
  if conversion "conv_l$level" "$CONV_TASKS" "$level"; then
    L="$LOGS/conv_l$level.log"
    row "merged-trace conversion, $CONV_TASKS tasks, level $level + deps" \
      "reference converter (Python): not available here" \
      "dfx-view $(field convert_s "$L") s, $(field peak_rss_mb "$L") MB (--format proto: $(field proto_s "$L") s, $(field size_ratio "$L") of the bytes)" \
      "$NOT" ">= 100x" "-"
    if [[ $level == 2 ]]; then
      R=$(printf "%.2f" "$(field ratio "$L")")
      row "conversion vs the I/O floor, $CONV_TASKS tasks, level 2 + deps" \
        "cat inputs + write output bytes: $(field floor_s "$L") s" \
        "dfx-view $(field convert_s "$L") s" "${R}x" "<= 1.5x" "$(met "$R" '<=' 1.5)"
    fi
  else
    row "merged-trace conversion, level $level + deps" "-" "FAILED" "-" "-" "-"
  fi
done
if ((MILLION)); then
  for level in 2 4; do
    if conversion "conv_1m_l$level" 1000000 "$level"; then
      L="$LOGS/conv_1m_l$level.log"
      # Both formats: JSON is what the reference tools read, proto the
      # compact trace; the cell says which met the target.
      S=$(field convert_s "$L") M=$(field peak_rss_mb "$L")
      P=$(field proto_s "$L") PM=$(field proto_peak_rss_mb "$L")
      ok=$(awk -v s="$S" -v m="$M" -v p="$P" -v pm="$PM" 'BEGIN {
        j = s < 5 && m <= 64; q = p < 5 && pm <= 64
        print (j && q) ? "yes (JSON and proto)" : j ? "yes (JSON; proto no)" : q ? "yes (proto; JSON no)" : "no" }')
      row "1M tasks, real records + deps.json, level $level" \
        "floor (cat inputs + write the JSON's bytes): $(field floor_s "$L") s" \
        "JSON $S s, $M MiB; --format proto $P s, $PM MiB ($(field size_ratio "$L") of the bytes)" "-" \
        "< 5 s, <= 64 MiB" "$ok"
    else
      row "1M tasks, level $level" "-" "FAILED" "-" "-" "-"
    fi
  done
else
  row "1M tasks, real records + deps.json" "-" "$NOT (run_all.sh --million)" "-" \
    "< 5 s, <= 64 MiB" "-"
fi

# Gather (row 5): gather_bench's "vs raw" column, the median of paired
# ratios gather / raw ZeroMQ (every case measured --reps times, interleaved).
# Its recovery agents are on the coordinator's host, so they stream over the
# local bulk path (ipc, no CURVE; README "Security"), and the raw baselines
# use ipc too. Raw ZeroMQ writes nothing, the gather writes every byte: the
# baseline cell also gives the like-with-like ratio against raw ZeroMQ whose
# receiver writes every frame to the same directory (raw+disk), and the same
# gather forced over CURVE (DFX_BULK_TRANSPORT=curve).
# The same once more with --warm-pages: each case's page cache from pages
# this VM touched a moment before (on this machine a cold page's first touch
# traps to the host: bench/README.md, "Cold pages"), which is what a host
# without that cost (bare metal) gives every write.
WARM="not measured"
if run gather_warm "$BUILD/bench/gather/gather_bench" "${GATHER[@]}" --no-curve --warm-pages; then
  read -r _ _ _ _ wg wr _ wd _ < <(grep -E '^[0-9]' "$LOGS/gather_warm.log" | tail -1)
  WARM="$wg MB/s, ${wr}x raw, ${wd}x raw+disk"
fi
if run gather "$BUILD/bench/gather/gather_bench" "${GATHER[@]}"; then
  read -r _ mib raw rawdisk gathered R rmin RD rdmin _ _ _ _ _ _ gcurve _ < <(grep -E '^[0-9]' "$LOGS/gather.log" | tail -1)
  row "gather ${GATHER[1]} agents x $mib MiB" \
    "raw ZeroMQ over ipc, same processes: $raw MB/s (median of ${GATHER[5]}; min ratio ${rmin//[\[\]]/}x; vs raw+disk $rawdisk MB/s: ${RD}x, min ${rdmin//[\[\]]/}x; gather over CURVE: $gcurve MB/s; with warm pages: $WARM)" \
    "$gathered MB/s" "${R}x" ">= 0.9x" "$(met "$R" '>=' 0.9)"
  # Its recovery agents run --wire-compression auto, which sends raw on
  # this host: the like-with-like ratio (raw+disk) is the loopback wire row.
  row "gather on loopback (--wire-compression auto: raw here)" \
    "raw ZeroMQ whose receiver writes the same bytes to the same disk: $rawdisk MB/s" \
    "$gathered MB/s" "${RD}x" ">= 0.9x" "$(met "$RD" '>=' 0.9)"
else
  row "gather" "-" "FAILED" "-" "-" "-"
fi

# Wire compression (bench/gather/link_bench.sh): the ratio of a real
# 100k-task dispatch with all five collectors, and a gather from 8 serve
# agents over a tc-limited veth link between two network namespaces against
# raw ZeroMQ over the same link (not measured where namespaces cannot be made).
LINK_ARGS=()
((TINY)) && LINK_ARGS=(--tiny)
if run link bench/gather/link_bench.sh "$BUILD" "${LINK_ARGS[@]}"; then
  L="$LOGS/link.log"
  grep '^ratio ' "$L" >"$LOGS/link_ratio.log"
  A=$(field artifact_bytes "$LOGS/link_ratio.log") W=$(field wire_bytes "$LOGS/link_ratio.log")
  R=$(field ratio "$LOGS/link_ratio.log")
  row "artifact bytes / wire bytes, one $( ((TINY)) && echo 2000 || echo 100000 )-task dispatch, all five (zstd)" "-" \
    "$A bytes -> $W on the wire" "${R}x" ">= 8x" "$(met "$R" '>=' 8)"
  for rate in 1gbit 10gbit; do
    line=$(grep "^link rate=$rate " "$L" | tail -1)
    target=$([[ $rate == 1gbit ]] && echo 5 || echo 1.5)
    if [[ $line == *not_measured=* ]]; then
      row "gather over a ${rate/gbit/ Gbit/s} link" "raw ZeroMQ over the same link" \
        "$NOT: ${line#*not_measured=}" "-" ">= ${target}x" "-"
    else
      n=$(sed -nE 's/.* agents=([0-9]+).*/\1/p' <<<"$line")
      rs=$(sed -nE 's/.* raw_s=([0-9.]+).*/\1/p' <<<"$line")
      gs=$(sed -nE 's/.* gather_s=([0-9.]+).*/\1/p' <<<"$line")
      lr=$(sed -nE 's/.* ratio=([0-9.]+).*/\1/p' <<<"$line")
      wire=$(sed -nE 's/.* wire=(.*)$/\1/p' <<<"$line")
      row "gather from $n agents over a ${rate/gbit/ Gbit/s} link (tc tbf, veth, netns)" \
        "raw ZeroMQ over the same link: $rs s" "$gs s (${wire//_/ })" "$(printf %.2f "$lr")x" \
        ">= ${target}x" "$(met "$lr" '>=' "$target")"
    fi
  done
else
  row "wire compression / link gather" "-" "FAILED" "-" "-" "-"
fi

# Dispatch round trip (row 6): p99 of a dispatch against a bare ZeroMQ round
# trip, paired runs (bare echo, then the run) repeated: the median of the
# per-pair p99 ratios, its min, and the CPU per round trip of both sides.
if run dispatch_rtt "$BUILD/bench/protocol/dispatch_rtt_bench" "${RTT[@]}"; then
  L="$LOGS/dispatch_rtt.log"
  read -r _ _ _ zmq99 _ disp99 _ R _ < <(grep -E "^$RTT_AGENTS " "$L" | tail -1)
  PAIRS=$(grep -E "p99 x over" "$L" | tail -1 |
    sed -E 's/.*over ([0-9]+) pair.*min ([0-9.]+),.*with it: p99 ([0-9]+) us, median ([0-9.]+) x.*/\1 pairs, min \2x; with each rank'"'"'s first dispatch (program load): \4x/')
  CPU=$(grep -E "CPU per round trip" "$L" | tail -1 | sed -E 's/.*bare echo (-?[0-9]+) us.*dispatch (-?[0-9]+) us.*/\1 vs \2 us/')
  # Only the dispatches sent once every rank's first one had ended.
  STEADY=$(grep -E "after the warm-up" "$L" | tail -1 |
    sed -E 's/.*p99 ([0-9]+) us, median ([0-9.]+) x.*/\1 us, \2x/')
  # The same echo with each peer a process of its own, as the agents are.
  PROC=$(grep -E "against the bare echo from" "$L" | tail -1 |
    sed -E 's/.*from ([0-9]+) processes.*median ([0-9.]+), min ([0-9.]+),.*its CPU per round trip (-?[0-9]+) us.*/\2x (min \3x; its CPU per round trip \4 us)/')
  row "dispatch round trip, $RTT_AGENTS agents, one-task program" \
    "bare ZeroMQ ROUTER/DEALER p99: $zmq99 us (medians; one process, a DEALER thread per peer); against the same echo from $RTT_AGENTS processes: $PROC" \
    "p99 $disp99 us (after the warm-up: $STEADY); CPU per round trip, bare vs dispatch: $CPU" \
    "${R}x (median of $PAIRS)" \
    "<= 2x" "$(met "$R" '<=' 2)"
else
  row "dispatch round trip" "-" "FAILED" "-" "-" "-"
fi

# L3 run (row 7): the post-run conversion's share of an all-five run's wall.
if run l3 bench/l3/l3_conversion_bench.sh "$BUILD" "${L3[@]}"; then
  L="$LOGS/l3.log"
  S=$(field share "$L")
  row "L3 run ${L3[0]} ranks x ${L3[1]} dispatches of ${L3[2]} tasks, all five collectors" \
    "same plan, no collectors: $(field none_s "$L") s" \
    "lazy (sim default): $(field lazy_s "$L") s, conversion $(field lazy_convert_s "$L") s, run-level trace on demand $(field run_trace_s "$L") s; eager: $(field eager_s "$L") s, conversion $(field eager_convert_s "$L") s ($(field jobs "$L") at a time)" \
    "conversion $(awk -v s="$S" 'BEGIN { printf "%.0f%%", 100 * s }') of the wall" \
    "conversion <= 20% of the wall" "$(met "$S" '<=' 0.2)"
  LR=$(field lazy_ratio "$L")
  row "L3 run ${L3[0]} ranks x ${L3[1]} dispatches of ${L3[2]} tasks, all five vs none" \
    "same plan, no collectors: $(field none_s "$L") s" "lazy (sim default): $(field lazy_s "$L") s" \
    "${LR}x" "<= 3x" "$(met "$LR" '<=' 3)"
else
  row "L3 run" "-" "FAILED" "-" "-" "-"
fi
# Collector cost (row 8): the same program with and without collectors.
if run perturbation bench/perturbation/perturbation_bench.sh "$BUILD" "${PERTURB[@]}"; then
  P="$LOGS/perturbation.log"
  way() { sed -nE "s/^perturbation: way=$1 .* $2=([0-9.]+).*/\1/p" "$P"; }
  pct() { awk -v r="$1" 'BEGIN { printf "%+.1f%%", 100 * (r - 1) }'; }
  W1=$(way swimlane1 wall_ratio) W4=$(way swimlane4 wall_ratio) W5=$(way all5 wall_ratio)
  P1=$(way swimlane1 paired_wall_ratio) P4=$(way swimlane4 paired_wall_ratio) P5=$(way all5 paired_wall_ratio)
  C1=$(way swimlane1 cpu_ratio) C4=$(way swimlane4 cpu_ratio) C5=$(way all5 cpu_ratio)
  # Two parts of the cost, each as a share of no collectors' wall: the
  # makespan added inside the run, and writing the artifacts' bytes alone.
  share() { awk -v r="$(way "$1" "$2")" 'BEGIN { printf "%+.1f%%", 100 * r }'; }
  shares() { echo "L1 $(share swimlane1 "$1"), L4 $(share swimlane4 "$1"), all five $(share all5 "$1")"; }
  # Judged on the paired ratios (the median of paired runs): each
  # way against no collectors in the same round, medianed over the rounds.
  row "collector cost, ${PERTURB[0]} tasks at L2, process wall (median of ${PERTURB[1]} paired rounds)" \
    "same program, no collectors, same round" \
    "L1 $(pct "$P1"), L4 $(pct "$P4"), all five $(pct "$P5") (ratio of the medians: L1 $(pct "$W1"), L4 $(pct "$W4"), all five $(pct "$W5"); process CPU: L1 $(pct "$C1"), L4 $(pct "$C4"), all five $(pct "$C5"); added inside the run (makespan): $(shares run_share); writing the artifacts' bytes alone: $(shares write_floor_share))" \
    "${P1}x / ${P4}x / ${P5}x" "L1 <= 2%, L4 <= 5%, all five <= 15%" \
    "$(awk -v a="$P1" -v b="$P4" -v c="$P5" 'BEGIN { print (a <= 1.02 && b <= 1.05 && c <= 1.15) ? "yes" : "no" }')"
else
  row "collector cost" "-" "FAILED" "-" "-" "-"
fi

# Emulator (row 9): real threads against its own virtual-clock mode.
if run device "$BUILD/bench/device/device_bench" "${DEVICE[@]}"; then
  seconds() { sed -nE "s/^ *$1 +([0-9.]+) s .*/\1/p" "$LOGS/device.log" | tail -1; }
  V=$(seconds 'emulator, virtual clock \(1 thread\)') T=$(seconds 'emulator, real threads')
  R=$(ratio "$T" "$V")
  row "emulator, ${DEVICE[1]}-task DAG, real threads" "its virtual-clock mode: $V s" "$T s" \
    "${R}x" "<= 2x" "$(met "$R" '<=' 2)"
else
  row "emulator" "-" "FAILED" "-" "-" "-"
fi

# Estimate error (row 10): `dfx-coordinator estimate` against the bytes the
# real runs then wrote, every collector and swimlane level, >= 5 shapes.
EST=()
((TINY)) && EST=(--tiny)
if run estimate python3 bench/estimate/estimate_error.py "${EST[@]}" "$BUILD"; then
  L="$LOGS/estimate.log"
  W=$(field worst_pct "$L")
  row "estimate error, every collector and level, $(field shapes "$L") program shapes, L2 and L3 ($(field cases "$L") runs)" \
    "bytes the run wrote" "worst per collector: $(sed -n 's/^estimate_error: per_collector=//p' "$L")" \
    "worst ${W}%" "within +-25%" "$(met "$W" '<=' 25)"
else
  row "estimate error" "-" "FAILED" "-" "-" "-"
fi

echo
((TINY)) && echo "(--tiny: tiny sizes, one run each; the figures and met? mean nothing)"
{
  echo "what|baseline (same run)|measured|ratio|target|met?"
  printf '%s\n' "${ROWS[@]}"
} | awk -F'|' '
  { for (i = 1; i <= NF; ++i) { cell[NR, i] = $i; if (length($i) > w[i]) w[i] = length($i) } n = NR }
  END {
    for (r = 1; r <= n; ++r) {
      line = "|"
      for (i = 1; i <= 6; ++i) line = line sprintf(" %-*s |", w[i], cell[r, i])
      print line
      if (r == 1) { line = "|"; for (i = 1; i <= 6; ++i) { d = ""; for (k = 0; k < w[i] + 2; ++k) d = d "-"; line = line d "|" } print line }
    }
  }'
exit "$FAILED"
