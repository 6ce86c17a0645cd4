#!/usr/bin/env bash
# Fault-injection hooks only in test builds (cmake/fault_hooks.cmake).
#
# Usage: fault_hooks_check.sh BUILD_DIR off
#        fault_hooks_check.sh BUILD_DIR on OBJECT...
#
# off (a build as it is installed): no program of the tree holds a
#   DFX_FAULT_* string, and none says "fault-injection hooks" in --version.
# on (the CI tree): OBJECT... are the sources that hold the hooks compiled
#   without them, as a release build compiles them: none holds a DFX_FAULT_*
#   string; the coordinator's artifact receiver calls no kill() and the
#   agent's main() no raise() (the two self-kills). The tree's own programs
#   do hold the strings (else this check would be blind). And its install is
#   refused, before anything is written, unless DFX_INSTALL_FAULT_HOOKS=1.
set -euo pipefail
BUILD=$1
HOOKS=$2
shift 2
fail() {
  echo "fault_hooks_check: FAIL: $*" >&2
  exit 1
}
command -v strings >/dev/null || fail "strings (binutils) is not installed: scripts/setup.sh"

# Prints the first DFX_FAULT_ strings of $1; fails when there is none. (No
# `grep -m` or `grep -q` in a pipe: under pipefail the writer's SIGPIPE would
# read as "not found".)
holds_fault_string() {
  local hits
  hits=$(strings -a "$1" | grep 'DFX_FAULT_' || true)
  [ -n "$hits" ] || return 1
  printf '%s\n' "$hits" | sed -n 1,3p
}
says_it_has_hooks() {
  local version
  version=$("$1" --version) || fail "$1 --version failed"
  case "$version" in *'fault-injection hooks'*) return 0 ;; *) return 1 ;; esac
}

if [ "$HOOKS" = off ]; then
  for program in bin/dfx-coordinator bin/dfx-rank-agent bin/dfx-view device/dfx-gen-program; do
    f="$BUILD/$program"
    [ -x "$f" ] || fail "$f is missing: build the tree first"
    if found=$(holds_fault_string "$f"); then fail "$f holds fault strings: $found"; fi
    if says_it_has_hooks "$f"; then fail "$f --version says it has hooks"; fi
  done
  echo "fault_hooks_check: no DFX_FAULT_* string in the programs of $BUILD"
  exit 0
fi

[ "$HOOKS" = on ] || fail "second argument: on or off, not '$HOOKS'"
# CTest passes $<TARGET_OBJECTS:...> as one ;-separated argument.
OBJECTS=()
for arg in "$@"; do
  IFS=';' read -r -a split <<<"$arg"
  OBJECTS+=("${split[@]}")
done
[ ${#OBJECTS[@]} -gt 0 ] || fail "no object files given"
set -- "${OBJECTS[@]}"
for o in "$@"; do
  [ -f "$o" ] || fail "$o is missing: build the tree first"
  if found=$(holds_fault_string "$o"); then fail "$o, compiled without hooks, holds: $found"; fi
  undefined=" $(nm -u "$o" | awk '{print $NF}' | tr '\n' ' ') "
  case "$o" in
    *artifact_receiver.cc.o)
      case "$undefined" in *' kill '*) fail "$o still calls kill() without hooks" ;; esac ;;
    */rank_agent/main.cc.o | */dfx-rank-agent.dir/main.cc.o)
      case "$undefined" in *' raise '*) fail "$o still calls raise() without hooks" ;; esac ;;
  esac
done
echo "fault_hooks_check: $# object(s) compiled without hooks hold no DFX_FAULT_* string"
holds_fault_string "$BUILD/bin/dfx-coordinator" >/dev/null ||
  fail "the hooks build's dfx-coordinator holds no DFX_FAULT_ string: this check is blind"
says_it_has_hooks "$BUILD/bin/dfx-coordinator" ||
  fail "the hooks build's dfx-coordinator --version does not say it has hooks"

T=$(mktemp -d "${TMPDIR:-/tmp}/dfx-fault-hooks.XXXXXX")
trap 'rm -rf "$T"' EXIT
if env -u DFX_INSTALL_FAULT_HOOKS cmake --install "$BUILD" --prefix "$T/prefix" >"$T/out" 2>&1; then
  fail "cmake --install of a tree with fault hooks succeeded"
fi
grep -q 'refusing to install the build tree' "$T/out" || fail "no reason given: $(cat "$T/out")"
grep -q 'DFX_FAULT_HOOKS=ON' "$T/out" || fail "the refusal does not name the option: $(cat "$T/out")"
grep -q 'DFX_INSTALL_FAULT_HOOKS=1' "$T/out" || fail "the refusal names no way out: $(cat "$T/out")"
if [ -e "$T/prefix" ] && [ -n "$(find "$T/prefix" -type f)" ]; then
  fail "the refused install wrote: $(find "$T/prefix" -type f | head -5)"
fi
echo "fault_hooks_check: the install of $BUILD is refused and writes nothing"
