#!/usr/bin/env bash
# The CI smoke of one benchmark (CTest label `bench`): runs it at a tiny size
# and passes only when it exits 0 AND its output matches every -e REGEX (the
# lines that carry its figures and its ratio), so a benchmark that rots —
# stops running, stops measuring, or prints "RUN FAILED" — fails CI.
# Usage: bench/smoke.sh -e REGEX [-e REGEX ...] -- COMMAND ARGS...
set -uo pipefail
patterns=()
while [[ $# -gt 0 && $1 != -- ]]; do
  [[ $1 == -e && $# -ge 2 ]] || { echo "usage: smoke.sh -e REGEX ... -- COMMAND..." >&2; exit 2; }
  patterns+=("$2")
  shift 2
done
[[ $# -ge 2 ]] || { echo "usage: smoke.sh -e REGEX ... -- COMMAND..." >&2; exit 2; }
shift
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [[ $rc -ne 0 ]]; then
  echo "smoke: '$*' exited with $rc" >&2
  exit 1
fi
for p in "${patterns[@]}"; do
  if ! grep -Eq -- "$p" <<<"$out"; then
    echo "smoke: the output of '$*' has no line matching /$p/" >&2
    exit 1
  fi
done
if grep -Eq 'FAILED' <<<"$out"; then
  echo "smoke: '$*' reported a failure" >&2
  exit 1
fi
