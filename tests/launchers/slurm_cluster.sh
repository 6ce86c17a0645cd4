#!/usr/bin/env bash
# A one-node Slurm cluster for tests, all its state in DIR (made here,
# removed at the end): munged with a key made here and its own socket,
# slurmctld and slurmd in the foreground on free ports, ProctrackType
# linuxproc, no cgroups. Usage:
#
#   slurm_cluster.sh DIR WATCH_PID
#
# Writes DIR/slurm.conf, waits (up to 60 s) until the node is idle, then
# writes DIR/ready and stays until it gets SIGTERM / SIGINT or WATCH_PID
# (the test) is gone; then stops what it started, by pid, and removes DIR.
# If the cluster cannot start, writes DIR/failed with the reason and the
# daemons' last log lines, and exits 1. Needs root (slurmd starts tasks as
# any user), slurm-wlm and munge.
set -uo pipefail
DIR=$1
WATCH=${2:-$PPID}
pids=()

stop() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for _ in $(seq 50); do
    alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.1
  done
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$DIR"
}
fail() {
  {
    echo "$1"
    for f in "$DIR"/log/*; do [ -s "$f" ] && { echo "--- $f"; tail -n 15 "$f"; }; done
  } >"$DIR/failed.tmp"
  mv "$DIR/failed.tmp" "$DIR/failed"
  cat "$DIR/failed" >&2
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null; done
  wait 2>/dev/null
  exit 1
}
trap 'stop; exit 0' TERM INT HUP

mkdir -p "$DIR" || exit 1
DIR=$(cd "$DIR" && pwd)
mkdir -p "$DIR/munge" "$DIR/state" "$DIR/spool" "$DIR/log"
chmod 700 "$DIR/munge"
for tool in munged mungekey slurmctld slurmd sinfo; do
  command -v "$tool" >/dev/null || PATH=$PATH:/usr/sbin:/sbin
  command -v "$tool" >/dev/null || fail "$tool is not installed (apt-get install slurm-wlm munge)"
done
[ "$(id -u)" = 0 ] || fail "a test Slurm cluster needs root (slurmd runs tasks as their user)"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
node=$(slurmd -C 2>/dev/null | sed -n 's/^NodeName=\([^ ]*\).*/\1/p')
[ -n "$node" ] || node=$(uname -n)

mungekey --create --bits 1024 --keyfile "$DIR/munge/munge.key" >"$DIR/log/mungekey.out" 2>&1 ||
  fail "mungekey could not make a key"
munged --foreground --force --socket="$DIR/munge/socket" --key-file="$DIR/munge/munge.key" \
  --log-file="$DIR/log/munged.log" --pid-file="$DIR/munge/munged.pid" \
  --seed-file="$DIR/munge/seed" >"$DIR/log/munged.out" 2>&1 &
pids+=($!)

cat >"$DIR/slurm.conf" <<END
# A one-node test cluster (tests/launchers/slurm_cluster.sh): state in $DIR.
ClusterName=dfxtest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge/socket
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
# More task slots than cores: the tests start a few agents on a 2-core machine.
SlurmdParameters=config_overrides
NodeName=$node NodeAddr=127.0.0.1 CPUs=16 State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
END
export SLURM_CONF=$DIR/slurm.conf
for _ in $(seq 50); do [ -S "$DIR/munge/socket" ] && break; sleep 0.1; done
[ -S "$DIR/munge/socket" ] || fail "munged did not make its socket $DIR/munge/socket"
slurmctld -D -i -f "$SLURM_CONF" >"$DIR/log/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" >"$DIR/log/slurmd.out" 2>&1 &
pids+=($!)
ready=0
for _ in $(seq 600); do
  if sinfo -h -o '%t' 2>/dev/null | grep -qx idle; then ready=1; break; fi
  for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null || fail "a daemon (pid $pid) exited"; done
  sleep 0.1
done
[ "$ready" = 1 ] || fail "the node did not become idle within 60 s: $(sinfo 2>&1)"
touch "$DIR/ready"
while kill -0 "$WATCH" 2>/dev/null; do
  sleep 0.5 &
  wait $! 2>/dev/null
done
stop
