#!/usr/bin/env bash
# Device check of Python frames: a pure-Python 3:1 workload under
# `metron sample -- python3` (no flag), its py::hot / py::cold shares printed by
# check_py_shares.py (75 % / 25 % within +-5 points expected). For the lead, on the device
# host (Python 3.12); scripts/gpu-validate.sh runs it and records the result in docs/gpu-validation.md. Not run in CI.
#
# Usage: tests/python/run_py_shares.sh        (from anywhere; results under $OUT or a temp dir)
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! python3 -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)'; then
  echo "SKIP: $(python3 --version) has no perf trampolines (Python >= 3.12 needed)"
  exit 0
fi
cargo build --release -p metron-user -p metron-cli
OUT=${OUT:-$(mktemp -d -t metron-py.XXXXXX)}
rm -rf "$OUT/py"
target/release/metron sample -o "$OUT/py/%exe%-%pid%" -- python3 tests/python/py_shares.py 3
python3 tests/python/check_py_shares.py "$OUT"/py/*
