#!/usr/bin/env bash
# Functions as regions on a program with many functions: a generated C program of FUNCS
# functions built with -finstrument-functions, each called CALLS times, run plain and under
# `metron run --functions . --min-instructions 0` (every function a region, each decided on
# its first call). Prints the wall times (median of RUNS interleaved runs, /usr/bin/time's
# elapsed seconds) and Metron's peak RSS: what deciding and recording that many functions
# adds.
#
# Usage: scripts/bench-functions-scale.sh
# Env:   FUNCS (20000), CALLS (10), RUNS (5), CARGO_TARGET_DIR (target), CC (cc).
set -euo pipefail
cd "$(dirname "$0")/.."
FUNCS=${FUNCS:-20000}
CALLS=${CALLS:-10}
RUNS=${RUNS:-5}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
CC=${CC:-cc}
cargo build --release -p metron-user -p metron-cli >&2
LIBDIR=$CARGO_TARGET_DIR/release
OUT=$(mktemp -d -t metron-functions-scale.XXXXXX)
python3 - "$FUNCS" "$CALLS" >"$OUT/many.c" <<'PY'
import sys
n, calls = int(sys.argv[1]), int(sys.argv[2])
print("#include <stdio.h>\nstatic volatile long sink;")
for i in range(n):
    print(f"__attribute__((noinline)) void f{i}(long x) {{ sink += x * {i % 97 + 1}; }}")
print("int main(void) {")
print(f"  for (long r = 0; r < {calls}; r++) {{")
for i in range(n):
    print(f"    f{i}(r);")
print("  }\n  printf(\"%ld\\n\", (long)sink);\n  return 0;\n}")
PY
$CC -O1 -finstrument-functions "$OUT/many.c" -o "$OUT/many"
elapsed() { /usr/bin/time -f "%e %M" "$@" 2>&1 >/dev/null | tail -1; }
plain=()
metron=()
rss=()
for _ in $(seq "$RUNS"); do
  plain+=("$(elapsed "$OUT/many" | cut -d' ' -f1)")
  read -r t m < <(elapsed env LD_PRELOAD="$LIBDIR/libmetron.so" METRON_PRELOAD=1 \
    METRON_OUTPUT_PATH="$OUT/run-%pid%" 'METRON_FUNCTIONS=.' METRON_FUNCTIONS_MIN_INSTRUCTIONS=0 \
    "$OUT/many")
  metron+=("$t")
  rss+=("$m")
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo "| $FUNCS functions x $CALLS calls, median of $RUNS | wall | peak RSS |"
echo "| --- | ---: | ---: |"
echo "| plain | $(median "${plain[@]}") s | - |"
echo "| every function a region (METRON_FUNCTIONS=., min 0) | $(median "${metron[@]}") s | $(median "${rss[@]}") KB |"
last=$(ls -d "$OUT"/run-* | tail -1)
python3 -c "import json,sys; f=json.load(open(sys.argv[1]))['functions']; print('functions made regions:', len(f['selected']), '- skipped:', len(f['skipped']))" "$last/metadata.json"
echo "(files: $OUT)" >&2
