#!/usr/bin/env bash
# Instructions per region begin+end pair through Metron's C API, per path, by valgrind's
# callgrind (benches/c/c_api_pairs.c): only the loop function on the calling thread
# (--toggle-collect=loop_<path>), difference of N1 and N2 pairs (cancels every setup cost and
# the first-use slow paths exactly). Both libmetron.so and libmetron.a.
#
# Usage: scripts/bench-c-api.sh [path ...]   (default: id inline name macro computed long empty)
# Env:   N1 (100000), N2 (200000), CARGO_TARGET_DIR (default target/release's parent: target),
#        CC (cc), CFLAGS (-O2).
# Output: a markdown table on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
N1=${N1:-100000}
N2=${N2:-200000}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
CC=${CC:-cc}
CFLAGS=${CFLAGS:--O2}
command -v valgrind >/dev/null || {
  echo "bench-c-api.sh: valgrind is missing (apt-get install valgrind)" >&2
  exit 1
}
cargo build --release -p metron-user >&2
LIBDIR=$CARGO_TARGET_DIR/release
OUT=$(mktemp -d -t metron-c-api-bench.XXXXXX)
# shellcheck disable=SC2086
$CC $CFLAGS -g -Iuser-api/include benches/c/c_api_pairs.c -o "$OUT/shared" \
  -L"$LIBDIR" -lmetron -Wl,-rpath,"$LIBDIR"
# shellcheck disable=SC2086
$CC $CFLAGS -g -Iuser-api/include benches/c/c_api_pairs.c -o "$OUT/static" \
  "$LIBDIR/libmetron.a" -lstdc++ -lpthread -ldl -lm -lrt
export METRON_OUTPUT_PATH=$OUT/run-%pid% METRON_TRACE=false METRON_SUMMARY=false

ir() { # $1 binary, $2 path, $3 pairs
  local file=$OUT/cg.$(basename "$1").$2.$3
  valgrind --tool=callgrind --callgrind-out-file="$file" --toggle-collect="loop_$2" \
    "$1" "$2" "$3" >"$file.log" 2>&1 || {
    echo "bench-c-api.sh: $1 $2 $3 failed; see $file.log" >&2
    echo NaN
    return
  }
  sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$file"
}

paths=("$@")
[ ${#paths[@]} -gt 0 ] || paths=(id inline name macro computed long empty)
echo "| path | instructions per pair, libmetron.so | instructions per pair, libmetron.a |"
echo "| --- | ---: | ---: |"
for p in "${paths[@]}"; do
  cells=()
  for bin in "$OUT/shared" "$OUT/static"; do
    a=$(ir "$bin" "$p" "$N1")
    b=$(ir "$bin" "$p" "$N2")
    cells+=("$(awk -v a="$a" -v b="$b" -v n1="$N1" -v n2="$N2" \
      'BEGIN { if (a == "NaN" || b == "NaN") print "failed"; else printf "%.1f", (b - a) / (n2 - n1) }')")
  done
  echo "| $p | ${cells[0]} | ${cells[1]} |"
done
echo "(callgrind files: $OUT)" >&2
