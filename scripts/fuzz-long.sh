#!/usr/bin/env bash
# Long random fuzzing of the metric layer's parsers, by hand or on a schedule (not in CI, whose
# fuzzing is the deterministic scripts/fuzz.sh): each target for FUZZ_SECONDS (default 600)
# with a random seed, from a scratch copy of the corpus. Crash inputs land in
# fuzz/artifacts/<target>/; add each to fuzz/corpus/<target>/ with its fix so scripts/fuzz.sh
# replays it from then on. The whole libFuzzer report is printed.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${FUZZ_SECONDS:-600}"
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked --version 0.13.2
fi
root="$PWD"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
target_dir="${CARGO_TARGET_DIR:-$root/target}/fuzz"
status=0
for target in ${FUZZ_TARGETS:-expr metric_xml}; do
    cp -r "fuzz/corpus/$target" "$scratch/$target"
    echo "fuzz-long: $target for ${seconds}s"
    if ! (cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run --target-dir "$target_dir" "$target" \
        "$scratch/$target" -- -max_total_time="$seconds" -print_final_stats=1); then
        echo "fuzz-long: $target FAILED (crash inputs in fuzz/artifacts/$target/)" >&2
        status=1
    fi
done
exit "$status"
