#!/usr/bin/env bash
# Cost of NVTX calls from C with Metron injected (NVTX_INJECTION64_PATH=libmetron.so), next to
# NVTX with no tool: tests/nvtx/nvtx_overhead.c, built with the real nvtx3 headers.
#
#   ns per pair:            best of 3 loops of $PAIRS pairs (tight loop; noisy on a shared VM)
#   instructions per pair:  callgrind, --toggle-collect on the loop function, difference of
#                           N1 and N2 pairs (cancels every setup cost exactly); with NVTX
#                           dlopening Metron, and with Metron preloaded (as `metron run` does)
#
# Usage: scripts/bench-nvtx.sh     Env: PAIRS (5000000), N1 (10000), N2 (100000),
#        CARGO_TARGET_DIR (default target/h-bench), METRON_NVTX_INCLUDE (the nvtx3 headers;
#        default: where scripts/install-deps.sh unpacks them).
set -euo pipefail
cd "$(dirname "$0")/.."
PAIRS=${PAIRS:-5000000}
N1=${N1:-10000}
N2=${N2:-100000}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target/h-bench}
INC=${METRON_NVTX_INCLUDE:-${XDG_CACHE_HOME:-$HOME/.cache}/metron-nvtx/nvidia/cu13/include}
[ -f "$INC/nvtx3/nvToolsExt.h" ] || {
  echo "bench-nvtx.sh: no nvtx3 headers in $INC; run scripts/install-deps.sh" >&2
  exit 1
}
cargo build --release -p metron-user >&2
LIB=$CARGO_TARGET_DIR/release/libmetron.so
OUT=$(mktemp -d -t metron-nvtx-bench.XXXXXX)
cc -std=c99 -O2 -g -I"$INC" tests/nvtx/nvtx_overhead.c -o "$OUT/nvtx_overhead" -ldl
# The C API's own begin/end pair, timed in the same minute: a yardstick for a noisy machine.
cc -std=c99 -O2 -Iuser-api/include examples/c/overhead.c -o "$OUT/c_overhead" \
  -L"$(dirname "$LIB")" -lmetron -Wl,-rpath,"$(dirname "$LIB")"
export METRON_OUTPUT_PATH=$OUT/run-%pid% METRON_TRACE=false

echo "no tool (NVTX's no-op path):"
env -u NVTX_INJECTION64_PATH "$OUT/nvtx_overhead" "$PAIRS"
echo "Metron injected (NVTX dlopens it):"
NVTX_INJECTION64_PATH=$LIB "$OUT/nvtx_overhead" "$PAIRS"
echo "Metron injected and preloaded (as under metron run):"
LD_PRELOAD=$LIB NVTX_INJECTION64_PATH=$LIB "$OUT/nvtx_overhead" "$PAIRS"
echo "for comparison, the C API (metron_region_begin/end by name and by id), same minute:"
"$OUT/c_overhead" "$PAIRS" enabled

command -v valgrind >/dev/null || {
  echo "bench-nvtx.sh: valgrind is missing: no instruction counts" >&2
  exit 0
}
ir() { # $1 tool lib or "", $2 loop (push|ex|async), $3 function, $4 pairs, $5 "preload" or ""
  local file=$OUT/cg.$2.$4.${1:+metron}$5
  NVTX_INJECTION64_PATH=$1 LD_PRELOAD=${5:+$1} valgrind --tool=callgrind \
    --callgrind-out-file="$file" --toggle-collect="$3" "$OUT/nvtx_overhead" "$4" "$2" \
    >"$file.log" 2>&1
  sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$file"
}
echo
echo "Metron injected: NVTX dlopens libmetron.so (NVTX_INJECTION64_PATH alone), or it is"
echo "preloaded as under \`metron run\`."
echo
echo "| NVTX call pair | instructions per pair, no tool | Metron injected, dlopened | Metron injected, preloaded |"
echo "| --- | ---: | ---: | ---: |"
for row in "push|push_pop_ns|nvtxRangePushA + nvtxRangePop" \
  "long|push_long_pop_ns|nvtxRangePushA (a 30-byte name) + nvtxRangePop" \
  "ex|push_ex_pop_ns|nvtxRangePushEx (payload, colour) + nvtxRangePop" \
  "async|start_end_ns|nvtxRangeStartA + nvtxRangeEnd"; do
  IFS='|' read -r loop fn what <<<"$row"
  cells=()
  for mode in none dlopen preload; do
    lib=$LIB pre=
    [ "$mode" = none ] && lib=
    [ "$mode" = preload ] && pre=preload
    a=$(ir "$lib" "$loop" "$fn" "$N1" "$pre")
    b=$(ir "$lib" "$loop" "$fn" "$N2" "$pre")
    cells+=("$(awk -v a="$a" -v b="$b" -v n1="$N1" -v n2="$N2" 'BEGIN { printf "%.1f", (b - a) / (n2 - n1) }')")
  done
  echo "| $what | ${cells[0]} | ${cells[1]} | ${cells[2]} |"
done
echo "(callgrind files: $OUT)" >&2
