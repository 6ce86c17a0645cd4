# Shared by the shell benchmarks under bench/ (source it; bash).

# bench_setup NAME BINARY...: exits 2 naming the first BINARY that is not
# built, then makes $WORK, a temporary directory deleted on exit.
bench_setup() {
  local name=$1 bin
  shift
  for bin; do
    [[ -x $bin ]] || { echo "$name: $bin is missing (build with -DDFX_BUILD_BENCH=ON)" >&2; exit 2; }
  done
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/dfx_${name}.XXXXXX")
  trap 'rm -rf "$WORK"' EXIT
}

# median: the median of the numbers on stdin, one a line.
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
