#!/usr/bin/env bash
# The build enforces the design (docs/design.md §3): a file may include another
# module's header ("<module>/...") only if the CMakeLists.txt of the folder
# it lives in (or the nearest one above it) links that module (dfx::<module>).
# An undeclared dependency is a build error here, before it becomes a cycle.
# Exit 1 names every offending include with the module that must be linked.
set -euo pipefail
cd "$(dirname "$0")/.."
# The modules: top-level folders that declare a dfx_module.
modules=$(grep -l 'dfx_module(' */CMakeLists.txt | cut -d/ -f1 | sort -u)
bad=0
while IFS= read -r file; do
  dir=$(dirname "$file")
  cmake=""
  d=$dir
  while [[ $d != . ]]; do
    if [[ -f $d/CMakeLists.txt ]]; then cmake=$d/CMakeLists.txt; break; fi
    d=$(dirname "$d")
  done
  [[ -n $cmake ]] || continue
  own=${file%%/*}
  linked=$(grep -o 'dfx::[a-z_]*' "$cmake" | sed 's/dfx:://' | sort -u)
  while IFS= read -r inc; do
    target=${inc%%/*}
    grep -qx "$target" <<<"$modules" || continue
    [[ $target == "$own" ]] && continue
    if ! grep -qx "$target" <<<"$linked"; then
      echo "$file includes \"$inc\" but $cmake does not link dfx::$target"
      bad=$((bad + 1))
    fi
  done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$file")
done < <(git ls-files '*.cc' '*.h')
if ((bad)); then
  echo "check-includes: $bad include(s) of modules that are not linked"
  exit 1
fi
echo "check-includes: every cross-module include is of a module its CMakeLists.txt links"
