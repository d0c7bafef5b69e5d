#!/usr/bin/env bash
# The whole test suite: what CI runs (.ci/run) and what the README tells you to run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# Instrumentation compiled out: every macro still type-checks, nothing is recorded.
cargo test -p metron --no-default-features --release
cargo test --workspace --release "$@"
# The Python package, on Python 3.11 and every Python >= 3.12 found.
scripts/test-python.sh
# Fuzz the metric layer's parsers deterministically: corpus replay, then a fixed seed and run count.
scripts/fuzz.sh
