#!/usr/bin/env bash
# On the GPU machine (Python 3.12 and PyTorch in /opt/torch/.venv, no Rust): the wheel and the
# `metron` command are built here first and carried (target/wheels, target/release/metron,
# target/release/libmetron.so). Runs the package's tests on Python >= 3.12 (the sys.monitoring
# engine) and checks that a PyTorch step's region-mode GPU counters equal the kernel-mode sum of
# its kernels.
#   here:   cargo build --release -p metron-cli -p metron-user && python3 -m maturin build --release -m python/Cargo.toml -o target/wheels
#   device: python/device/check.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-/opt/torch/.venv/bin/python}
"$PY" -m pip install -q --no-deps --force-reinstall target/wheels/metron-*.whl
echo "== tests on $("$PY" --version)"
(cd python/tests && "$PY" -m unittest -v 2>&1 | tail -n 30)
METRIC=${METRIC:-smsp__inst_executed.sum}
out=$(mktemp -d)
for mode in region kernel; do
  METRON_OUTPUT_PATH="$out/$mode" PATH="$(dirname "$PY"):$PATH" target/release/metron run \
    --gpu-counter-mode "$mode" --gpu-metrics "$METRIC" -- "$PY" python/device/train_loop.py
done
"$PY" - "$out" "$METRIC" <<'PY'
import json, os, sys
out, metric = sys.argv[1], sys.argv[2]
def step(mode):
    s = json.load(open(os.path.join(out, mode, "summary.json")))
    rows = {r["region"]: r for r in s["gpu"]["gpu_counters"]["by_region"]}
    return rows["step"]
region, kernel = step("region"), step("kernel")
r, k = region["sums"][metric], kernel["sums"][metric]
print("step, region mode: %s instances, %s = %.0f" % (region["instances"], metric, r))
print("step, kernel mode: %s kernels, %s = %.0f" % (kernel["kernels"], metric, k))
print("equal" if r == k else "DIFFERENT by %.4f %%" % ((r - k) / k * 100))
sys.exit(0 if r == k else 1)
PY
