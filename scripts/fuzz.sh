#!/usr/bin/env bash
# Runs the cargo-fuzz targets of the metric layer (expression parser, metric XML reader) for a
# bounded time each: FUZZ_SECONDS (default 30). Installs cargo-fuzz when missing. The seed
# corpus in fuzz/corpus is copied to a scratch folder so runs do not grow the repository.
# cargo fuzz passes nightly-only flags; RUSTC_BOOTSTRAP=1 lets the stable toolchain accept them.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${FUZZ_SECONDS:-30}"
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked --version 0.13.2
fi
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
target_dir="${CARGO_TARGET_DIR:-$PWD/target}/fuzz"
for target in expr metric_xml; do
    cp -r "fuzz/corpus/$target" "$scratch/$target"
    echo "fuzz: $target for ${seconds}s"
    (cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run --target-dir "$target_dir" "$target" \
        "$scratch/$target" -- -max_total_time="$seconds" -print_final_stats=1 2>&1 | tail -4)
done
