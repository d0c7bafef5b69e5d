#!/usr/bin/env bash
# The Python package's costs next to PyPI's nvtx and viztracer (python/bench/compare.py): per
# region block, per traced call, and a spinning function's time against the program's clock.
# Builds and installs the wheel first. `--check` exits 1 when a target is missed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh >/dev/null
python3 -m maturin build --release --quiet -m python/Cargo.toml -o target/wheels >/dev/null
python3 -m pip install -q --disable-pip-version-check --force-reinstall --no-deps target/wheels/metron-*.whl
cd "$(mktemp -d)"
METRON_OUTPUT_PATH="$PWD/run" python3 "$OLDPWD/python/bench/compare.py" "$@"
