#!/usr/bin/env python3
"""The GPU validation suite's own test, without a GPU (CI runs it from scripts/test.sh).

Stand-ins for nvidia-smi, nvcc, ncu, nvdisasm and metron go first on PATH: the "programs"
nvcc builds print what the real ones print (MT_GRAPH, FIRST, STEP and TOGGLE lines with known
numbers), `metron run` runs the program after `--`, ncu prints nothing. The suite must then
produce every row, none of them an ERROR (a broken check), the rows whose numbers come from
the programs' own lines with the right arithmetic, and a results page under 400 lines.
Exit status 0 when all of that holds.
"""

import json
import os
import stat
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SUITE = os.path.join(HERE, "suite.py")

PROGRAM_OUTPUT = {
    "mt_graph": "MT_GRAPH threads=2 overlap=1 replays=4 kernels=32",
    # The first region 0.4 ms longer than the later median (2.1 ms) under a tool, 2.0 ms bare.
    "first_launch": "\n".join(
        "FIRST iter=%d launch_us=5.0 events_ms=2.0 region_ms=%s metron=1" % (i, "2.500" if i == 0 else "2.100")
        for i in range(8)),
    "cupti_toggle": "STEP N    -> K      +400.0 ns +- 3.0 (p25 +390.0, p75 +410.0)  kernel records\n"
                    "STEP K    -> KC     +200.0 ns +- 3.0 (p25 +190.0, p75 +210.0)  launch callbacks",
    "metron_toggle": "TOGGLE rounds=400 launches=200 off_ns=4000.0 on_ns=4650.0 diff_ns=+650.0 p25=+600.0 p75=+700.0 se=5.0",
    "pc_stalls": "KTIME chase 1.0\nPC_STALLS done reps=1",
    "pc_inline": "",
    "pm_mix": "KTIME copy 1.5 BYTES 2147483648\nKTIME fma 1.0 BYTES 0",
    "whatif_steps": "WHATIF step=0 ms=1.0000",
    # `metron whatif --json`: five steps of 1 ms, replayed exactly, predicted 0.9 ms; the graph's
    # host syncs taken from CUPTI's synchronization records.
    "whatif": json.dumps({"per": {"instances": [
        {"recorded_ns": 1000000, "replayed_ns": 1000000, "predicted_ns": 900000} for _ in range(5)]},
        "graph": {"recorded_waits": 5, "waits_on_another_stream": 0}}),
}

STANDINS = {
    "nvidia-smi": """#!/bin/sh
case "$*" in
  -L) echo "GPU 0: Stand-in GPU (UUID: GPU-0)";;
  *compute_cap*) echo "9.0";;
  *) echo "Stand-in GPU, 999.99";;
esac
""",
    "nvcc": """#!/bin/sh
if [ "$1" = "--version" ]; then echo "Cuda compilation tools, release 99.9, stand-in"; exit 0; fi
out=""; prev=""
for a in "$@"; do [ "$prev" = "-o" ] && out=$a; prev=$a; done
name=$(basename "$out")
printf '#!/bin/sh\\ncat "%s/%s.txt"\\n' "$STANDIN_OUTPUTS" "$name" > "$out"
chmod +x "$out"
""",
    "ncu": "#!/bin/sh\nexit 0\n",
    "nvdisasm": "#!/bin/sh\nexit 0\n",
}

METRON = """#!/bin/sh
# `metron run|sample [flags] -- program args`: makes the run folder and runs the program;
# `metron whatif ...` prints a canned answer.
if [ "$1" = "whatif" ]; then cat "$STANDIN_OUTPUTS/whatif.txt"; exit 0; fi
[ -n "$METRON_OUTPUT_PATH" ] && mkdir -p "$METRON_OUTPUT_PATH"
while [ $# -gt 0 ] && [ "$1" != "--" ]; do shift; done
shift
exec "$@"
"""


def write(path, text, executable=False):
    with open(path, "w") as f:
        f.write(text)
    if executable:
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def main():
    failures = []
    with tempfile.TemporaryDirectory(prefix="metron-suite-selftest-") as tmp:
        tools, bins, outputs, out = (os.path.join(tmp, d) for d in ("tools", "bin", "outputs", "out"))
        for d in (tools, bins, outputs):
            os.makedirs(d)
        for name, text in STANDINS.items():
            write(os.path.join(tools, name), text, executable=True)
        for name, text in PROGRAM_OUTPUT.items():
            write(os.path.join(outputs, name + ".txt"), text + "\n")
        write(os.path.join(bins, "metron"), METRON, executable=True)
        write(os.path.join(bins, "libmetron.so"), "")
        env = dict(os.environ, PATH=tools + os.pathsep + os.environ["PATH"], STANDIN_OUTPUTS=outputs,
                   CUDA_HOME=os.path.join(tmp, "no-cuda"))
        p = subprocess.run([sys.executable, SUITE, "--from", bins, "--out", out, "--budget", "120",
                            "--python", os.path.join(tmp, "no-python"), "--work", os.path.join(tmp, "work")],
                           env=env, capture_output=True, text=True, timeout=300)
        if not os.path.exists(os.path.join(out, "results.json")):
            print(p.stdout[-3000:], p.stderr[-3000:], sep="\n")
            print("FAIL the suite wrote no results.json (rc=%d)" % p.returncode)
            return 1
        results = json.load(open(os.path.join(out, "results.json")))
        rows = {r["key"]: r for r in results["rows"]}
        page = open(os.path.join(out, "gpu-validation.md")).read()

    def expect(ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            failures.append(what)

    expect(p.returncode == 1, "the suite exits 1 when rows fail (rc=%d)" % p.returncode)
    expect(len(rows) == 29, "every check has its rows (%d)" % len(rows))
    errors = ["%s: %s" % (k, r["measured"]) for k, r in rows.items() if r["result"] == "ERROR"]
    expect(not errors, "no check broke: %s" % errors)
    expect(all(r["measured"] and r["measured"] != "not run" for r in rows.values()), "every row says what it measured or why not")
    launch = rows["launch_cost"]
    expect(launch["measured"].startswith("+50 ns") and launch["result"] == "PASS",
           "launch cost = Metron's on-off difference - CUPTI's floor: %s" % launch["measured"])
    first = rows["first_default"]
    expect(first["measured"].startswith("first 2.500 ms, later median 2.100 ms") and first["result"] == "PASS",
           "first launch against the later median: %s" % first["measured"])
    cost = rows["region_cost"]
    expect(cost["result"] == "PASS" and cost["measured"].startswith("+0.0 µs"),
           "region cost against the program alone: %s" % cost["measured"])
    expect(rows["kernel_mode"]["result"] == "FAIL", "no counters from a stand-in: FAIL with the reason")
    expect(rows["torch_step"]["result"] == "SKIP" and "no-python" in rows["torch_step"]["measured"],
           "no PyTorch: SKIP with the reason")
    replay = rows["whatif_replay"]
    expect(replay["result"] == "PASS" and replay["measured"].startswith("median step 1.000 ms recorded, 1.000 ms replayed"),
           "what-if replay against the recorded steps: %s" % replay["measured"])
    kernel = rows["whatif_kernel"]
    expect(kernel["result"] == "FAIL" and "10 %: 0.900 vs 1.000 ms (-10.0 %)" in kernel["measured"],
           "what-if prediction against the re-run: %s" % kernel["measured"])
    expect(page.count("\n") <= 400 and "## Latest results" in page and "Stand-in GPU" in page,
           "the results page: method, machine and table, at most 400 lines")
    if failures or "-v" in sys.argv:
        print(p.stdout[-6000:], p.stderr[-3000:], sep="\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
