#!/bin/bash
# End-of-stop device check (2026-11-25): `metron avail` lists PC sampling's stall reasons;
# pc_probe (the Rust crate + metron-gpu-nvidia, probes now sharing examples/probe_support) attributes
# PC samples to its `step` region; the same program under `metron run` (two copies of Metron
# in one process: the crate's joins the preloaded libmetron.so) writes one run folder.
set -u
B=$PWD/device-bin/final
R=$OUT; mkdir -p $R
nvidia-smi -L
echo "== avail"; $B/metron avail --counters > $R/avail.txt 2>&1; grep -n "stall reasons" $R/avail.txt | cut -c1-400
$B/metron avail --counters --json > $R/avail.json 2>/dev/null
python3 - $R/avail.json <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for g in d["counters"]["gpu_metrics"]:
    s=g.get("stall_reasons",{})
    print("gpu", g["index"], "metrics", g["count"], "stall reasons", len(s.get("names",[])), s.get("reason"))
PY
summ() {
python3 - "$1" <<'PY'
import json,sys,os
d=sys.argv[1]
if not os.path.exists(d+"/metadata.json"): print("no metadata in", d); sys.exit()
m=json.load(open(d+"/metadata.json"))
print("runtime", m.get("runtime"))
print("records", m["records"], "gpu_pc_sampling", {k:v for k,v in m.get("gpu_pc_sampling",{}).items() if k in ("samples","dropped","total_samples","attributed","lost")})
s=json.load(open(d+"/summary.json"))
print("summary keys", sorted(s.keys())[:30])
g=s.get("gpu_pc_sampling") or {}
print(json.dumps(g)[:1200])
PY
}
echo "== pc_probe alone"
METRON_GPU_PC_SAMPLING=10 METRON_OUTPUT_PATH=$R/alone timeout 120 $B/pc_probe > $R/alone.log 2>&1; echo rc=$?; tail -4 $R/alone.log
summ $R/alone
echo "== pc_probe under metron run"
METRON_GPU_PC_SAMPLING=10 timeout 120 $B/metron run --library $B/libmetron.so --output-path $R/run -- $B/pc_probe > $R/run.log 2>&1; echo rc=$?; tail -6 $R/run.log
ls -d $R/run*
for d in $R/run*; do echo "-- $d"; summ $d; done
rm -f $R/*.json
