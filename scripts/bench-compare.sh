#!/usr/bin/env bash
# Tight-loop time of each implementation against the bare two-rdtsc floor measured in the same
# run: `pairs compare` alternates chunks of the floor and of the implementation, round after
# round, and reports the medians (load that comes and goes on a shared machine hits both
# alike). Also the ns each adds around ~100 ns of dependent arithmetic, against the same
# work alone, measured the same interleaved way.
#
# Usage: scripts/bench-compare.sh [impl ...]     (default: all but metron-env-off)
# Env:   ROUNDS (default 200); CARGO_TARGET_DIR (default target/h-bench).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-200}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target/h-bench}
cargo build --release -p metron-benches --bin pairs >&2
BIN=$CARGO_TARGET_DIR/release/pairs
export METRON_TRACE=${METRON_TRACE:-0}
if [ $# -gt 0 ]; then
  impls=("$@")
else
  mapfile -t impls < <("$BIN" 2>&1 | sed -n 's/^impl: //p' | tr ',' '\n' | tr -d ' ' | grep -v -x -e metron-env-off -e floor)
fi
echo "| implementation | floor (ns/pair) | implementation (ns/pair) | ratio to floor | work alone (ns) | floor adds (ns) | implementation adds (ns) |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
for imp in "${impls[@]}"; do
  echo "compare: $imp" >&2
  tight=$("$BIN" compare "$imp" "$ROUNDS" 2>/dev/null | grep '^floor')
  # floor F ns/pair, IMP T ns/pair, ratio R (...)
  f=$(sed -n 's/^floor \([0-9.]*\) ns\/pair.*/\1/p' <<<"$tight")
  t=$(sed -n 's/^floor [0-9.]* ns\/pair, [^ ]* \([0-9.]*\) ns\/pair.*/\1/p' <<<"$tight")
  r=$(sed -n 's/.*ratio \([0-9.]*\) (medians.*/\1/p' <<<"$tight")
  work="- | - | -"
  if [ "$imp" != metron-bundle4 ]; then
    line=$("$BIN" compare "$imp" "$ROUNDS" work 2>/dev/null | grep '^around work')
    # around work: bare B ns, floor F ns (+FA), IMP I ns (+IA)
    b=$(sed -n 's/^around work: bare \([0-9.]*\) ns.*/\1/p' <<<"$line")
    fa=$(sed -n 's/.*floor [0-9.]* ns (\([-+0-9.]*\)).*/\1/p' <<<"$line")
    ia=$(sed -n 's/.*) *, [^ ]* [0-9.]* ns (\([-+0-9.]*\))$/\1/p' <<<"$line")
    work="$b | $fa | $ia"
  fi
  echo "| $imp | $f | $t | $r | $work |"
done
