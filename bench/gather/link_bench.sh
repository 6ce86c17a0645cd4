#!/usr/bin/env bash
# Artifact bytes on the wire (README "Large runs", "Compression"), measured on
# REAL artifacts: one dispatch of `dfx-gen-program layered --tasks 100000
# --width 32 --seed 7` with all five collectors, made once per invocation.
#
#   ratio   the run's own manifest, --wire-compression zstd: artifact bytes /
#           bytes on the wire (wire.artifact_bytes / wire.wire_bytes).
#   link    `dfx-coordinator gather --attach` (default --wire-compression
#           auto) from AGENTS serve agents, each holding a copy of that
#           dispatch in its spool, over a rate-limited link: two network
#           namespaces this script makes, joined by a veth pair with a tbf
#           qdisc (`tc ... tbf rate RATE`) on both ends; the coordinator in
#           one, the agents in the other. Baseline, same link, same run:
#           AGENTS raw ZeroMQ DEALER processes (gather_bench --raw-sender)
#           pushing the same bytes in 1 MiB frames to one ROUTER
#           (gather_bench --raw-receive) that discards them. Both timed from
#           starting the processes until the last byte arrived (gather: until
#           it exited, every file verified and renamed into place).
#           Interleaved: raw, gather, gather, raw per repetition; the ratio
#           is raw seconds / gather seconds (higher: the gather is faster).
#
# Where namespaces cannot be made (not root, no iproute2/tc, no veth), each
# link row says "not_measured=<why>", never a figure.
#
# Usage: link_bench.sh BUILD_DIR [--tiny]
#   --tiny: 2 agents, a 2000-task program, one repetition (the CTest smoke).
# Output lines (run_all.sh reads them):
#   ratio artifact_bytes=N wire_bytes=N ratio=X
#   link rate=R agents=N bytes_each=N raw_s=S gather_s=S ratio=X wire=...
#   link rate=R not_measured=<why>
# Every process it starts is ended by pid; every namespace and file it made
# is removed on exit, also on failure.
set -uo pipefail
BUILD=$(cd "${1:?usage: link_bench.sh BUILD_DIR [--tiny]}" && pwd)
TINY=${2:-}
BIN=$BUILD/bin
GEN=$BUILD/device/dfx-gen-program
RAW=$BUILD/bench/gather/gather_bench
TASKS=100000 AGENTS=8 REPS=2
[ "$TINY" = --tiny ] && TASKS=2000 AGENTS=2 REPS=1
ALL=(--enable-chip-swimlane --enable-dep-gen --enable-pmu --enable-scope-stats --dump-args 1)
T=$(mktemp -d "${TMPDIR:-/tmp}/dfx-link-bench.XXXXXX")
ID=$$
NS_C="dfxlb-$ID-c" NS_A="dfxlb-$ID-a"
C_IP=10.89.0.1 A_IP=10.89.0.2
PIDS=()
NAMESPACES=()

log() { echo "link_bench: $*" >&2; }
cleanup() {
  set +e
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  for ns in "${NAMESPACES[@]}"; do
    for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
    ip netns del "$ns" 2>/dev/null
  done
  rm -rf "$T"
}
trap cleanup EXIT
die() { log "FAILED: $*"; for f in "$T"/*.log; do [ -f "$f" ] && tail -n 20 "$f" >&2; done; exit 1; }
now() { date +%s.%N; }
manifest() { python3 -c "import json,sys; m=json.load(open('$1')); $2"; }

# --- 1. real artifacts, and the compression ratio of the run that made them ---
"$GEN" layered --tasks "$TASKS" --width 32 --seed 7 -o "$T/prog.json" || die "dfx-gen-program"
"$BIN/dfx-coordinator" run "$T/prog.json" --ranks 1 --launcher local --work-dir "$T/ref" \
  --virtual-clock "${ALL[@]}" --wire-compression zstd --no-report --swimlane-traces lazy -q \
  >"$T/ref.log" 2>&1 || die "the reference run"
manifest "$T/ref/dfx_outputs/run_manifest.json" "
w = m['wire']
print('ratio artifact_bytes=%d wire_bytes=%d ratio=%.2f chosen=\"%s\"' % (w['artifact_bytes'],
      w['wire_bytes'], w['artifact_bytes'] / max(1, w['wire_bytes']), w['chosen']))" ||
  die "the reference run's manifest"

# The same dispatch left in an agent's spool: its coordinator killed after
# one chunk (test-only fault injection), the agent exits keeping the files.
(DFX_FAULT_COORDINATOR_KILL_AFTER_CHUNKS=1 "$BIN/dfx-coordinator" run "$T/prog.json" \
  --ranks 1 --launcher local --work-dir "$T/crash" --virtual-clock "${ALL[@]}" \
  --wire-compression off --no-report --heartbeat-interval 0.1 --heartbeat-timeout 2 \
  >"$T/crash.log" 2>&1) 2>/dev/null
HEX=$(manifest "$T/crash/dfx_outputs/.session.json" "print(m['session'])") || die "no session record"
for _ in $(seq 600); do pgrep -f "dfx-rank-agent.*$HEX" >/dev/null || break; sleep 0.1; done
SRC_SPOOL="$T/crash/.dfx_spool/$HEX/rank0"
[ -d "$SRC_SPOOL" ] || die "the crashed run left no spool"
BYTES_EACH=$(find "$SRC_SPOOL" -type f -not -path '*/.xxh64/*' -printf '%s\n' | awk '{s+=$1} END {print s}')
log "spool of one dispatch: $BYTES_EACH bytes; $AGENTS agents"
# The raw senders send whole 1 MiB frames: each sends this many bytes.
RAW_EACH=$(((BYTES_EACH + 1048575) / 1048576 * 1048576))
# The session record of an AGENTS-rank run whose every rank spooled that dispatch.
python3 - "$T/crash/dfx_outputs/.session.json" "$AGENTS" <<'EOF' || die "session record"
import json, sys
p, n = sys.argv[1], int(sys.argv[2])
r = json.load(open(p)); r['ranks'] = n; r['agent_spools'] = []
json.dump(r, open(p, 'w'))
EOF
rm -f "$T/crash/dfx_outputs/run_manifest.json"
cp -a "$T/crash" "$T/work_template"
for i in $(seq 0 $((AGENTS - 1))); do
  mkdir -p "$T/tmpl$i/$HEX"
  cp -a "$SRC_SPOOL" "$T/tmpl$i/$HEX/rank$i"
done

# --- 2. the link ---------------------------------------------------------------
WHY=""
if [ "$(id -u)" != 0 ]; then
  WHY="needs root for network namespaces"
elif ! command -v ip >/dev/null || ! command -v tc >/dev/null; then
  WHY="needs iproute2 (ip, tc)"
elif ! ip netns add "$NS_C" 2>/dev/null; then
  WHY="ip netns add failed"
else
  NAMESPACES+=("$NS_C")
  ip netns add "$NS_A" && NAMESPACES+=("$NS_A") || WHY="ip netns add failed"
  if [ -z "$WHY" ]; then
    ip -n "$NS_C" link set lo up && ip -n "$NS_A" link set lo up &&
      ip link add vc netns "$NS_C" type veth peer name va netns "$NS_A" &&
      ip -n "$NS_C" addr add "$C_IP/24" dev vc && ip -n "$NS_A" addr add "$A_IP/24" dev va &&
      ip -n "$NS_C" link set vc up && ip -n "$NS_A" link set va up || WHY="cannot make a veth pair"
  fi
fi
if [ -n "$WHY" ]; then
  for rate in 1gbit 10gbit; do echo "link rate=$rate not_measured=\"$WHY\""; done
  exit 0
fi
"$BIN/dfx-coordinator" keygen "$T/keys" $(for i in $(seq 0 $((AGENTS - 1))); do echo --agent a$i; done) \
  >"$T/keygen.log" 2>&1 || die "keygen"

shape() {  # rate: the same tbf on both ends of the link
  local rate=$1 burst=$((${1%gbit} * 1024 * 1024))
  ip netns exec "$NS_C" tc qdisc replace dev vc root tbf rate "$rate" burst "$burst" latency 50ms &&
    ip netns exec "$NS_A" tc qdisc replace dev va root tbf rate "$rate" burst "$burst" latency 50ms
}

PORT=$((21000 + ID % 20000))
raw_once() {
  local t0 t1 p s
  ip netns exec "$NS_C" "$RAW" --raw-receive "tcp://$C_IP:$PORT" $((RAW_EACH * AGENTS)) \
    >"$T/raw_recv.log" 2>&1 &
  p=$!; PIDS+=("$p")
  sleep 0.3
  t0=$(now)
  local senders=()
  for i in $(seq 0 $((AGENTS - 1))); do
    ip netns exec "$NS_A" "$RAW" --raw-sender "tcp://$C_IP:$PORT" "raw-$i" "$RAW_EACH" \
      >>"$T/raw_send.log" 2>&1 &
    senders+=($!); PIDS+=("$!")
  done
  wait "$p" || die "raw ZeroMQ receiver"
  t1=$(now)
  for s in "${senders[@]}"; do wait "$s"; done
  PORT=$((PORT + 1))
  awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f\n", b - a}'
}
gather_once() {
  local t0 t1 g rc agents=()
  rm -rf "$T/work" "$T"/spool*
  cp -a "$T/work_template" "$T/work"
  for i in $(seq 0 $((AGENTS - 1))); do cp -a "$T/tmpl$i" "$T/spool$i"; done
  t0=$(now)
  ip netns exec "$NS_C" "$BIN/dfx-coordinator" gather --work-dir "$T/work" --attach \
    --bind "tcp://$C_IP:$PORT" --keys "$T/keys" --timeout 600 --no-report \
    >"$T/gather.log" 2>&1 &
  g=$!; PIDS+=("$g")
  for i in $(seq 0 $((AGENTS - 1))); do
    ip netns exec "$NS_A" env TMPDIR="$T" "$BIN/dfx-rank-agent" serve \
      --coordinator "tcp://$C_IP:$PORT" --rank "$i" --key "$T/keys/agents/a$i.key" \
      --coordinator-key "$T/keys/coordinator.pub" --spool "$T/spool$i" >>"$T/agents.log" 2>&1 &
    agents+=($!); PIDS+=("$!")
  done
  wait "$g"; rc=$?
  t1=$(now)
  for a in "${agents[@]}"; do kill "$a" 2>/dev/null; wait "$a" 2>/dev/null; done
  [ "$rc" = 0 ] || die "gather exited $rc"
  PORT=$((PORT + 1))
  awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f\n", b - a}'
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

for rate in 1gbit 10gbit; do
  if ! shape "$rate"; then
    echo "link rate=$rate not_measured=\"tc tbf on the veth pair failed\""
    continue
  fi
  RAWS=() GATHERS=()
  for rep in $(seq "$REPS"); do
    if ((rep % 2)); then
      RAWS+=("$(raw_once)"); GATHERS+=("$(gather_once)")
    else
      GATHERS+=("$(gather_once)"); RAWS+=("$(raw_once)")
    fi
  done
  r=$(printf '%s\n' "${RAWS[@]}" | median)
  g=$(printf '%s\n' "${GATHERS[@]}" | median)
  WIRE=$(grep -o 'wire compression auto: [^;]*' "$T/gather.log" | tail -1 | sed 's/wire compression auto: //; s/ /_/g')
  printf 'link rate=%s agents=%d bytes_each=%d raw_s=%.2f gather_s=%.2f ratio=%.2f wire=%s\n' \
    "$rate" "$AGENTS" "$BYTES_EACH" "$r" "$g" "$(awk -v a="$r" -v b="$g" 'BEGIN {print a / b}')" "${WIRE:-?}"
done
exit 0
