#!/bin/bash
# Causal profiling on a device host (16 idle cores): Metron against Coz 0.2.2 on the barrier, every
# speedup fixed (compare-coz.sh MODE fixed, the default), both tools at once (PARALLEL=1, the
# default) or one after the other (PARALLEL=0); MODE=random RUNS=3 COZ_AT_ONCE=1: Coz's own
# random speedups, its 6 runs and Metron's at once; METRON_AT_ONCE=N also N of Metron's runs at
# once (a 64-core host: nvidia-h100-x4).
# Run: run(command="bash tests/causal/device-compare.sh SECONDS", carry=["device-bin"])
set -u
B=$(realpath ${B:-device-bin}); C=$(realpath device-bin/coz)
secs=${1:-45}
{ date -u; nproc; uptime; } 2>&1
export PATH=$C/bin:$PATH LD_LIBRARY_PATH=$C/deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export METRON_BIN=$B/metron CFLAGS="-I$C/include" PARALLEL=${PARALLEL:-1}
export COZ_AT_ONCE=${COZ_AT_ONCE:-0} METRON_AT_ONCE=${METRON_AT_ONCE:-1}
time bash tests/causal/compare-coz.sh /tmp/cmp "$secs" "${RUNS:-1}" 20000 "${MODE:-fixed}"
for d in /tmp/cmp/metron /tmp/cmp/coz; do echo "== $d"; head -30 $d/causal.txt 2>/dev/null; done
python3 - <<'PY'
import json, glob
for i, f in enumerate(sorted(glob.glob("/tmp/cmp/metron*/**/metadata.json", recursive=True))):
    s = json.load(open(f)).get("sampling", {})
    if i == 0:
        print({k: s[k] for k in list(s)[:10]})
    c = s.get("causal", {})
    print(f, "delays_inserted_ns", c.get("delays_inserted_ns"), "slept_ns", c.get("slept_ns"))
PY
if [ -n "${OUT:-}" ]; then
  for d in metron coz; do mkdir -p "$OUT/$d" && cp /tmp/cmp/$d/causal.* "$OUT/$d/" 2>/dev/null; done
  # The raw profiles in one file (a reply brings back only so many files), to merge with
  # another call's (`metron causal --from ...`).
  mkdir -p /tmp/raw && cp /tmp/cmp/coz-*.coz /tmp/raw/ 2>/dev/null
  for m in /tmp/cmp/metron-*/profile.coz; do [ -f "$m" ] && cp "$m" "/tmp/raw/$(basename "$(dirname "$m")").coz"; done
  tar -C /tmp -czf "$OUT/raw-profiles.tar.gz" raw
fi
true
