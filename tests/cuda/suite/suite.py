#!/usr/bin/env python3
"""The GPU validation suite: builds its CUDA programs with the machine's nvcc, runs every
check against its oracle (ncu, CUPTI alone, torch.profiler, nvdisasm, the programs' own
counts), prints one table and writes the results page.

Usage (scripts/gpu-validate.sh calls it):
  suite.py --from BIN_DIR --out OUT [--budget SECONDS] [--only NAME,...] [--python PYTHON]

BIN_DIR holds `metron` and `libmetron.so` (and optionally `wheels/` and `COMMIT`), as
`scripts/gpu-validate.sh --stage` writes them. OUT receives gpu-validation.md, results.json,
suite.log and runs.tgz (logs and small outputs; no traces). Exit status 0 when every row
passed or was skipped with its reason, 1 otherwise, 2 on bad arguments.
"""

import argparse
import datetime
import glob
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import cost  # noqa: E402
import counters  # noqa: E402
import programs  # noqa: E402
import python_checks  # noqa: E402
import sampling  # noqa: E402
import whatif_check  # noqa: E402
from runner import Check, Row, Suite, run_checks, table  # noqa: E402

# In order of what they guard, cheapest evidence first; each has its own time cap.
CHECKS = [Check(*c) for c in (
    counters.CHECK,
    sampling.PC_CHECK,
    sampling.ANNOTATIONS_CHECK,
    sampling.PM_CHECK,
    cost.FIRST_CHECK,
    cost.LAUNCH_CHECK,
    python_checks.STEP_CHECK,
    python_checks.KERNEL_CHECK,
    python_checks.SAMPLED_CHECK,
    python_checks.FRAME_CHECK,
    whatif_check.CHECK,
)]


def first_line(argv, last=False):
    """The first (or last) line a command prints, "unknown" when it cannot run."""
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30).stdout.strip().splitlines()
        return out[-1 if last else 0].strip() if out else "unknown"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def machine(bin_dir):
    nvcc = programs.nvcc()
    commit_file = os.path.join(bin_dir, "COMMIT")
    gpus = 0
    if shutil.which("nvidia-smi"):
        listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout
        gpus = sum(1 for line in listed.splitlines() if line.startswith("GPU "))
    return {
        "gpu": first_line(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"]),
        "gpus": gpus,
        "cuda": first_line([nvcc, "--version"], last=True) if nvcc else "no nvcc",
        "cpus": os.cpu_count(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": open(commit_file).read().strip() if os.path.exists(commit_file) else "unknown",
    }


def perfetto_from_wheels(suite):
    """The trace checks decode with the `perfetto` package's protos: installed from the staged
    wheels into the work folder when the machine lacks it."""
    probe = [sys.executable, "-c", "import perfetto.protos.perfetto.trace.perfetto_trace_pb2"]
    if subprocess.run(probe, capture_output=True).returncode == 0:
        return
    wheels = sorted(glob.glob(os.path.join(suite.bin, "wheels", "*.whl")))
    if not wheels:
        suite.log("no perfetto package and no staged wheels: the trace checks will be skipped")
        return
    # Pure-Python wheels are zip files laid out as site-packages: unpacking them is installing
    # them (the machine's Python may have no pip).
    site = os.path.join(suite.work, "site")
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as z:
            z.extractall(site)
    os.environ["PYTHONPATH"] = site + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else "")
    ok = subprocess.run(probe, capture_output=True).returncode == 0
    suite.log("perfetto from the staged wheels: %s" % ("importable" if ok else "still not importable"))


def write_page(out, rows, info, seconds):
    with open(os.path.join(HERE, "method.md"), encoding="utf-8") as f:
        method = f.read().rstrip() + "\n"
    passed = sum(1 for r in rows if r.result == "PASS")
    lines = [
        method,
        "## Latest results",
        "",
        "GPU: %s (%d on the machine); %s; %d CPUs. Date: %s. Metron: %s. The suite took %.0f s; "
        "%d of %d rows passed." % (info["gpu"], info["gpus"], info["cuda"], info["cpus"] or 0, info["date"],
                                   info["commit"], seconds, passed, len(rows)),
        "",
        table(rows),
        "",
    ]
    with open(os.path.join(out, "gpu-validation.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


def pack(suite, out):
    """Logs and the small outputs of every run (no traces) into OUT/runs.tgz."""
    keep = (".out", ".err", ".txt", ".json", ".csv", ".log")
    with tarfile.open(os.path.join(out, "runs.tgz"), "w:gz") as tar:
        for root, _, files in os.walk(suite.work):
            if os.sep + "site" in root or os.sep + "bin" in root[len(suite.work):]:
                continue
            for name in files:
                path = os.path.join(root, name)
                if name.endswith(keep) and os.path.getsize(path) < 4 << 20:
                    tar.add(path, arcname=os.path.relpath(path, suite.work))
    shutil.copy(os.path.join(suite.work, "logs", "suite.log"), os.path.join(out, "suite.log"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--from", dest="bin_dir", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget", type=float, default=540.0)
    ap.add_argument("--only", default="")
    ap.add_argument("--python", default=os.environ.get("TORCH_PYTHON", "/opt/torch/.venv/bin/python3"))
    ap.add_argument("--work", default="/tmp/metron-gpu-validate")
    args = ap.parse_args()
    for need in ("metron", "libmetron.so"):
        if not os.path.exists(os.path.join(args.bin_dir, need)):
            print("suite.py: %s has no %s (stage it with scripts/gpu-validate.sh --stage %s)"
                  % (args.bin_dir, need, args.bin_dir), file=sys.stderr)
            return 2
    started = time.monotonic()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.out, exist_ok=True)
    suite = Suite(args.bin_dir, args.work, args.budget, args.python)
    os.environ["PATH"] = os.path.join(programs.CUDA, "bin") + os.pathsep + os.environ.get("PATH", "")
    info = machine(args.bin_dir)
    suite.log("machine: %s" % json.dumps(info))
    checks = CHECKS
    if args.only:
        wanted = set(args.only.split(","))
        checks = [c for c in CHECKS if c.name in wanted or any(k in wanted for k, *_ in c.rows)]
    if not shutil.which("nvidia-smi"):
        rows = [Row(key, c, o, e) for check in checks for key, c, o, e in check.rows]
        for row in rows:
            row.skip("no NVIDIA GPU on this machine (nvidia-smi not found)")
    else:
        perfetto_from_wheels(suite)
        programs.build_all(suite)
        rows = run_checks(suite, checks)
    seconds = time.monotonic() - started
    print()
    print(table(rows))
    write_page(args.out, rows, info, seconds)
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump({"machine": info, "seconds": round(seconds), "rows": [r.__dict__ for r in rows]}, f, indent=1)
    pack(suite, args.out)
    return 0 if all(r.result in ("PASS", "SKIP") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
