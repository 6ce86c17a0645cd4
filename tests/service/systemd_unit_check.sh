#!/usr/bin/env bash
# The systemd unit of a serve agent (share/systemd/dfx-rank-agent@.service.in)
# passes `systemd-analyze verify`, with its ExecStart pointed at this build's
# dfx-rank-agent (verify checks that the binary exists), as a template and
# as instance 0; a unit with a wrong binary path fails it (the check is not
# blind). Its sandbox is as the README says, and `systemd-analyze security`
# rates its exposure below 3.0 ("OK") where that command can rate a file.
#
# Usage: systemd_unit_check.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
SRC=$1
BUILD=$2
fail() {
  echo "systemd_unit_check: FAIL: $*" >&2
  exit 1
}
if ! command -v systemd-analyze >/dev/null; then
  echo "systemd_unit_check: SKIPPED: systemd-analyze is not installed (scripts/setup.sh: systemd)"
  exit 0
fi
UNIT_IN="$SRC/share/systemd/dfx-rank-agent@.service.in"
AGENT=$(realpath -m "$BUILD/bin/dfx-rank-agent")
[ -x "$AGENT" ] || fail "$AGENT is missing: build dfx-rank-agent first"
T=$(mktemp -d "${TMPDIR:-/tmp}/dfx-systemd.XXXXXX")
trap 'rm -rf "$T"' EXIT
cd "$T"

sed "s|@DFX_AGENT_BINARY@|$AGENT|" "$UNIT_IN" >"$T/dfx-rank-agent@.service"
cp "$T/dfx-rank-agent@.service" "$T/dfx-rank-agent@0.service"
for unit in dfx-rank-agent@.service dfx-rank-agent@0.service; do
  systemd-analyze verify --man=no "$T/$unit" >"$T/verify.log" 2>&1 ||
    fail "systemd-analyze verify $unit: $(cat "$T/verify.log")"
  [ ! -s "$T/verify.log" ] || fail "systemd-analyze verify $unit warned: $(cat "$T/verify.log")"
done
echo "systemd_unit_check: systemd-analyze verify passes (template and instance 0)"

sed "s|@DFX_AGENT_BINARY@|$T/no-such-agent|" "$UNIT_IN" >"$T/dfx-rank-agent@1.service"
if systemd-analyze verify --man=no "$T/dfx-rank-agent@1.service" >/dev/null 2>&1; then
  fail "verify accepted a unit whose binary does not exist: the check is blind"
fi

# The sysusers.d file makes the unit's user (in a scratch root, not this host's).
R="$T/root"
mkdir -p "$R/etc" "$R/usr/lib/sysusers.d"
cp "$SRC/share/systemd/dfx-agent.sysusers" "$R/usr/lib/sysusers.d/dfx-agent.conf"
if command -v systemd-sysusers >/dev/null && systemd-sysusers --root="$R" >"$T/sysusers.log" 2>&1; then
  grep -q '^dfx-agent:x:[0-9]*:[0-9]*:dfx rank agent:/var/lib/dfx-agent:' "$R/etc/passwd" ||
    fail "systemd-sysusers made no user dfx-agent: $(cat "$T/sysusers.log")"
  echo "systemd_unit_check: the sysusers.d file creates the user dfx-agent"
else
  echo "systemd_unit_check: systemd-sysusers --root cannot run here; the user file is not checked"
fi

# What the README promises of the sandbox.
for line in 'User=dfx-agent' 'ProtectSystem=strict' 'ProtectHome=yes' 'PrivateTmp=yes' \
  'NoNewPrivileges=yes' 'CapabilityBoundingSet=' 'Restart=on-failure' \
  'StateDirectory=dfx-agent/rank%i' 'LoadCredential=agent.key:/etc/dfx/agent/agent.key'; do
  grep -qx -- "$line" "$UNIT_IN" || fail "the unit lacks the line $line"
done
grep -q -- '--spool %S/dfx-agent/rank%i' "$UNIT_IN" || fail "the spool is not the state directory"
if grep -q '^ReadWritePaths=' "$UNIT_IN"; then fail "the unit opens more than the spool"; fi

if systemd-analyze security --offline=true --no-pager "$T/dfx-rank-agent@0.service" \
  >"$T/security.log" 2>&1; then
  level=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' "$T/security.log")
  [ -n "$level" ] || fail "no exposure level in: $(tail -3 "$T/security.log")"
  awk -v l="$level" 'BEGIN { exit !(l < 3.0) }' || fail "exposure level $level (want < 3.0)"
  echo "systemd_unit_check: systemd-analyze security: exposure level $level"
else
  echo "systemd_unit_check: systemd-analyze security --offline is not available here; not rated"
fi
