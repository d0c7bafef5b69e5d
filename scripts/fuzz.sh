#!/usr/bin/env bash
# Deterministic fuzzing of the metric layer's parsers (expression parser, metric XML reader),
# as CI runs it: for each cargo-fuzz target,
#   1. replay the checked-in corpus (fuzz/corpus/<target>: seeds and the inputs of past crashes,
#      e.g. the 4,096 '(' that overflowed the recursive parser) once (-runs=0), then
#   2. mutate from it with a fixed seed and a fixed number of runs (FUZZ_SEED, default 1;
#      FUZZ_RUNS, default 20000), with address randomisation off (`setarch -R`: compared
#      pointer values feed libFuzzer's mutations) and no corpus reloading (`-reload=0`: timed),
#      so the same tree always runs the same inputs. Where `setarch -R` is refused this step
#      is skipped, and said so, rather than run at random.
# No time limit decides what runs: CI cannot go red by chance. On a failure the whole
# libFuzzer report (the crash, its stack, the artifact path) is printed and the script fails.
# Long random fuzzing is scripts/fuzz-long.sh.
# cargo fuzz passes nightly-only flags; RUSTC_BOOTSTRAP=1 lets the stable toolchain accept them.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${FUZZ_RUNS:-20000}"
seed="${FUZZ_SEED:-1}"
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked --version 0.13.2
fi
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
root="$PWD"
target_dir="${CARGO_TARGET_DIR:-$root/target}/fuzz"

# Runs libFuzzer on target $1 ($2 says what for) over corpus folder $3, the rest being
# libFuzzer's flags; prints one line when it passes and everything it said when it fails.
fuzz_run() {
    local target="$1" what="$2" corpus="$3"
    shift 3
    local log="$scratch/$target.log"
    if (cd "$root/fuzz" && RUSTC_BOOTSTRAP=1 $fixed_layout cargo fuzz run --target-dir "$target_dir" \
        "$target" "$corpus" -- "$@" -print_final_stats=1) >"$log" 2>&1; then
        local units
        units="$(grep -o 'number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)"
        echo "fuzz: $target: $what: ok (${units:-?} inputs run)"
    else
        echo "fuzz: $target: $what FAILED; libFuzzer's report follows" >&2
        cat "$log" >&2
        echo "fuzz: $target: $what FAILED (report above; crash inputs in fuzz/artifacts/$target/;" \
            "reproduce with: cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run $target <artifact>)" >&2
        return 1
    fi
}

fixed_layout=""
if setarch -R true 2>/dev/null; then
    fixed_layout="setarch -R"
fi

for target in expr metric_xml; do
    # The corpus as checked in, every input once.
    fuzz_run "$target" "corpus replay" "$root/fuzz/corpus/$target" -runs=0
    # A fixed seed and run count over a scratch copy (new inputs must not grow the repository).
    if [[ -z "$fixed_layout" ]]; then
        echo "fuzz: $target: seeded run skipped: setarch -R (fixed addresses) is refused here"
        continue
    fi
    cp -r "fuzz/corpus/$target" "$scratch/$target"
    fuzz_run "$target" "seed $seed, $runs runs" "$scratch/$target" -seed="$seed" -runs="$runs" \
        -reload=0
done
