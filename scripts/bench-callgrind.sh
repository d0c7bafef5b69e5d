#!/usr/bin/env bash
# Instructions per region begin/end pair, by valgrind's callgrind, for Metron, the floor and
# the peers (benches/src/bin/pairs.rs).
#
# Each implementation runs twice, with N1 and N2 pairs; instructions per pair is
# (Ir(N2) - Ir(N1)) / (N2 - N1), which cancels every setup cost exactly. Two counts, each from
# its own pair of runs:
#   hot path      only inside Impl::run_chunk on the calling thread (--toggle-collect): what
#                 the instrumented thread executes per pair, slow paths included when taken;
#   whole process every thread (flushers, collectors, tracing services) plus the housekeeping
#                 between chunks (Metron's flush, fastrace's new root, puffin's new frame).
#                 Run with W1/W2 pairs: code that spins or polls on a clock (fastant's TSC
#                 calibration, left out; Metron's; the peers' background threads) runs a number
#                 of instructions that depends on valgrind's speed, so larger counts dilute
#                 that noise (about one instruction per pair).
#
# Usage: scripts/bench-callgrind.sh [impl ...]     (default: all; see `pairs` without args)
# Env:   N1, N2 (hot path, default 10000, 100000); W1, W2 (whole process, default 100000,
#        1000000); HOT_ONLY=1 skips the whole-process runs; CARGO_TARGET_DIR (default
#        target/h-bench); PAIRS_BIN (default pairs; tracing_pairs measures the `tracing`
#        paths) with HOT_TOGGLE (the hot-path function, default
#        metron_benches::Impl::run_chunk; tracing_pairs::run_chunk for tracing_pairs);
#        CARGO_FEATURES (extra cargo flags, e.g. "--no-default-features" without the peers).
# Output: a markdown table on stdout; callgrind files under $OUT_DIR (default: a temp folder).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || {
  echo "bench-callgrind.sh: valgrind is missing (apt-get install valgrind)" >&2
  exit 1
}
N1=${N1:-10000}
N2=${N2:-100000}
W1=${W1:-100000}
W2=${W2:-1000000}
HOT_ONLY=${HOT_ONLY:-0}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target/h-bench}
PAIRS_BIN=${PAIRS_BIN:-pairs}
HOT_TOGGLE=${HOT_TOGGLE:-metron_benches::Impl::run_chunk}
# shellcheck disable=SC2086
cargo build --release -p metron-benches --bin "$PAIRS_BIN" ${CARGO_FEATURES:-} >&2
BIN=$CARGO_TARGET_DIR/release/$PAIRS_BIN
OUT_DIR=${OUT_DIR:-$(mktemp -d -t metron-callgrind.XXXXXX)}
mkdir -p "$OUT_DIR"
# Tracy refuses to start when valgrind's CPUID hides the invariant TSC.
export TRACY_NO_INVARIANT_CHECK=1
export METRON_OUTPUT_PATH=${METRON_OUTPUT_PATH:-$OUT_DIR/metron-output/%exe%-%pid%-%time%}
export METRON_TRACE=${METRON_TRACE:-0}

if [ $# -gt 0 ]; then
  impls=("$@")
else
  # The list `pairs` prints on a usage error.
  mapfile -t impls < <("$BIN" 2>&1 | sed -n 's/^impl: //p' | tr ',' '\n' | tr -d ' ')
fi

# Ir of one run: $1 impl, $2 n, $3 "hot" or "all".
count() {
  local file="$OUT_DIR/cg.$1.$2.$3"
  local toggle=()
  if [ "$3" = hot ]; then
    toggle=(--toggle-collect="$HOT_TOGGLE")
  else
    # fastant (fastrace's clock) calibrates the TSC in a constructor by spinning for a fixed
    # time: its count depends on valgrind's speed, so it is left out (it runs in every process).
    toggle=(--toggle-collect='*___init___ctor*' --collect-atstart=yes)
  fi
  valgrind --tool=callgrind --callgrind-out-file="$file" "${toggle[@]}" \
    "$BIN" "$1" "$2" >"$file.log" 2>&1 || {
    echo "bench-callgrind.sh: $1 $2 failed; see $file.log" >&2
    echo NaN
    return
  }
  sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$file"
}

# Instructions per pair from counts $1 (at $3 pairs) and $2 (at $4 pairs).
per_pair() {
  awk -v a="$1" -v b="$2" -v n1="$3" -v n2="$4" \
    'BEGIN { if (a == "NaN" || b == "NaN") print "failed"; else printf "%.1f", (b - a) / (n2 - n1) }'
}

echo "| implementation | hot path (instructions/pair) | whole process (instructions/pair) |"
echo "| --- | ---: | ---: |"
for imp in "${impls[@]}"; do
  echo "callgrind: $imp" >&2
  h1=$(count "$imp" "$N1" hot)
  h2=$(count "$imp" "$N2" hot)
  whole="-"
  if [ "$HOT_ONLY" != 1 ]; then
    a1=$(count "$imp" "$W1" all)
    a2=$(count "$imp" "$W2" all)
    whole=$(per_pair "$a1" "$a2" "$W1" "$W2")
  fi
  echo "| $imp | $(per_pair "$h1" "$h2" "$N1" "$N2") | $whole |"
done
echo "(hot path: N1=$N1, N2=$N2; whole process: W1=$W1, W2=$W2; callgrind files in $OUT_DIR)" >&2
