#!/usr/bin/env bash
# The Python package: builds its abi3 wheel with maturin (against the workspace's target/),
# installs it into python3 and into every Python >= 3.12 found (pyenv's, or python3.12 and
# python3.13 on PATH), and runs python/tests/ with each. The sys.monitoring engine needs 3.12:
# where none is found its test says so and the setprofile engine is tested alone.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p metron-user >/dev/null # target/release/libmetron.so: the preloaded runtime's test
rm -rf target/wheels/metron-*.whl
python3 -m maturin build --release --quiet -m python/Cargo.toml -o target/wheels >/dev/null
wheel=$(ls target/wheels/metron-*.whl)
interpreters=(python3)
for candidate in python3.12 python3.13 \
  "$(pyenv root 2>/dev/null)"/versions/3.12*/bin/python3 "$(pyenv root 2>/dev/null)"/versions/3.13*/bin/python3; do
  # A pyenv shim exists for every installed version but runs only the selected ones.
  if [ -x "$(command -v "$candidate" 2>/dev/null)" ] && "$candidate" -c 'import sys' >/dev/null 2>&1; then
    interpreters+=("$candidate")
  fi
done
found_new=0
for py in "${interpreters[@]}"; do
  version=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  [ "$("$py" -c 'import sys; print(int(sys.version_info >= (3, 12)))')" = 1 ] && found_new=1
  echo "scripts/test-python.sh: Python $version ($py)"
  "$py" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps "$wheel"
  log=$(mktemp)
  if ! (cd python/tests && "$py" -m unittest -v) >"$log" 2>&1; then
    cat "$log"
    echo "scripts/test-python.sh: failed on Python $version" >&2
    exit 1
  fi
  grep -E "^(test_|skipped|Ran |OK)" "$log" || true
  rm -f "$log"
done
if [ "$found_new" = 0 ]; then
  echo "scripts/test-python.sh: no Python >= 3.12 here: the sys.monitoring engine is tested on the GPU machine (scripts/device-python.sh)"
fi
