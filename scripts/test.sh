#!/usr/bin/env bash
# The whole test suite: what CI runs (.ci/run) and what the README tells you to run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cargo test --workspace --release "$@"
