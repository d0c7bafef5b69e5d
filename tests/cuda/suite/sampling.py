"""PC sampling (stall reasons) and PM sampling (GPU metrics over time) against ncu and against
the trace's own kernel slices, on `pc_stalls` (three kernels of known dominant stall),
`pc_inline` (inlined device functions) and `pm_mix` (copies and FMA kernels with idle gaps)."""

import csv
import json
import os
import re
import sys

from runner import failure

PC_ROWS = [
    ("pc_vs_ncu", "PC sampling: stall-reason shares per kernel",
     "ncu `smsp__pcsamp_warps_issue_stalled_*` on the same program",
     "same top three reasons in the same order for each kernel; each within 5 points"),
]

ANNOTATION_ROWS = [
    ("pc_annotations", "PC sampling: trace annotations and inlined-at chains, continuous and serialized",
     "the trace's kernel slices (Perfetto's own protos), `summary.json`, `nvdisasm -gi`",
     "every check of `tests/cuda/pc_annotations_check.py` passes"),
]

PM_ROWS = [
    ("pm_tracks", "PM sampling: DRAM and SM tracks where the kernels run",
     "the kernel slices of the same trace; bytes moved / copy duration (CUDA events)",
     "DRAM high in copies, SM in FMA kernels, both low in gaps; high samples within 2 intervals of their kernel; every kernel sampled; copy DRAM bytes/s within 10 %"),
    ("pm_vs_ncu", "PM sampling: DRAM read bytes/s inside the copy kernel",
     "ncu: `dram__bytes_read.sum` / `gpu__time_duration.sum` of the same kernel",
     "within 10 %"),
]


def ncu_pc(suite, prog):
    base = ["ncu", "--clock-control", "none", "--csv", "--page", "raw"]
    done = suite.sh("ncu-pcsamp", base + ["--metrics", "group:smsp__pcsamp_warp_stall_reasons", prog, "1"], timeout=200)
    if "pcsamp" not in done.out:
        done = suite.sh("ncu-pcsamp-regex", base + ["--metrics", "regex:smsp__pcsamp_warps_issue_stalled_.*", prog, "1"], timeout=200)
    return done


def run_pc(suite, rows):
    prog = suite.program("pc_stalls")
    pc, pc_dir = suite.metron("pc-stalls", [prog, "1"], {"METRON_GPU_PC_SAMPLING": "10"})
    ncu = ncu_pc(suite, prog)
    ncu_csv = os.path.join(suite.work, "logs", "ncu-pcsamp.csv")
    with open(ncu_csv, "w") as f:
        f.write(ncu.out)
    samples = os.path.join(pc_dir, "pc_samples.csv")
    if pc.rc != 0 or not os.path.exists(samples):
        rows["pc_vs_ncu"].set(failure(pc, "metron run") if pc.rc != 0 else "the run wrote no pc_samples.csv", False)
    elif ncu.rc != 0 or "pcsamp" not in ncu.out:
        rows["pc_vs_ncu"].set(failure(ncu, "ncu"), False)
    else:
        cmp = suite.sh("compare-pcsamp", [sys.executable, os.path.join(suite.cuda_tests, "pc_stalls_vs_ncu.py"), samples, ncu_csv], timeout=60)
        verdicts = re.findall(r"top-3 max diff ([\d.]+) pts.* -> (OK|FAIL)$", cmp.out, re.M)
        worst = max((float(d) for d, _ in verdicts), default=float("nan"))
        agree = sum(1 for _, v in verdicts if v == "OK")
        rows["pc_vs_ncu"].set("%d/%d kernels agree; largest top-3 difference %.2f points" % (agree, len(verdicts), worst),
                              len(verdicts) >= 3 and agree == len(verdicts) and "ALL OK" in cmp.out)


def run_annotations(suite, rows):
    row = rows["pc_annotations"]
    folder = os.path.join(suite.work, "pc-annotations")
    os.makedirs(folder, exist_ok=True)
    dis = suite.sh("nvdisasm-pc-inline", ["nvdisasm", "-gi", "-c", suite.program("pc_inline.cubin")], timeout=60)
    with open(os.path.join(folder, "pc_inline.nvdisasm-gi.txt"), "w") as f:
        f.write(dis.out)
    for prog, args in (("pc_stalls", ["1"]), ("pc_inline", ["50"])):
        for mode in ("continuous", "serialized"):
            name = "%s_%s" % (prog, mode)
            _, run_dir = suite.metron("pcann-" + name, [suite.program(prog)] + args, {
                "METRON_GPU_PC_SAMPLING": "10", "METRON_GPU_PC_SAMPLING_MODE": mode}, timeout=90)
            link = os.path.join(folder, name)
            if not os.path.lexists(link):
                os.symlink(run_dir, link)
    check = suite.sh("check-pc-annotations", [sys.executable, os.path.join(suite.cuda_tests, "pc_annotations_check.py"), folder], timeout=120)
    if "No module named" in check.err or "perfetto" in check.err and check.rc == 2:
        row.skip("the `perfetto` Python package is missing (stage it with --stage)")
        return
    lines = [l for l in check.out.splitlines() if l.startswith(("ok   ", "FAIL "))]
    bad = [l[5:] for l in lines if l.startswith("FAIL")]
    if not lines:
        row.set(failure(check, "pc_annotations_check.py"), False)
        return
    row.set("%d/%d checks pass%s" % (len(lines) - len(bad), len(lines), ("; first failure: " + bad[0][:160]) if bad else ""),
            check.rc == 0 and not bad)


def ncu_copy_rate(text):
    """DRAM read bytes/s of pm_mix's copy kernels in ncu's raw CSV (mean over launches)."""
    rows = list(csv.DictReader(l for l in text.splitlines() if l.startswith('"')))
    rates = []
    for r in rows:
        if "copy_kernel" not in r.get("Kernel Name", ""):
            continue
        try:
            rates.append(float(r["dram__bytes_read.sum"].replace(",", "")) /
                         (float(r["gpu__time_duration.sum"].replace(",", "")) / 1e9))
        except (KeyError, ValueError, ZeroDivisionError):
            continue
    return sum(rates) / len(rates) if rates else None


def run_pm(suite, rows):
    prog = suite.program("pm_mix")
    interval = 100000
    pm, pm_dir = suite.metron("pm-mix", [prog, "3", "3000"], {
        "METRON_GPU_PM_SAMPLING": "on", "METRON_GPU_PM_INTERVAL": str(interval)})
    log = os.path.join(suite.work, "logs", "pm-mix.out")
    if pm.rc != 0 or not os.path.exists(os.path.join(pm_dir, "trace.pftrace")):
        why = failure(pm, "metron run") if pm.rc != 0 else "the run wrote no trace.pftrace"
        rows["pm_tracks"].set(why, False)
        rows["pm_vs_ncu"].set(why, False)
        return
    check = suite.sh("check-pm-sampling", [sys.executable, os.path.join(suite.cuda_tests, "pm_sampling_check.py"),
                                           pm_dir, log, str(interval)], timeout=120)
    verdicts = re.findall(r"^CHECK (PASS|FAIL) (\S+)", check.out, re.M)
    failed = [name for v, name in verdicts if v == "FAIL"]
    rows["pm_tracks"].set("%d/%d checks pass%s" % (len(verdicts) - len(failed), len(verdicts),
                                                   ("; failed: " + ", ".join(failed)) if failed else ""),
                          len(verdicts) >= 4 and not failed)
    metron_rates = []
    try:
        result = json.load(open(os.path.join(pm_dir, "pm_sampling_check.json")))
        for k in result["kernels"]:
            v = k.get("dram__bytes_read.sum.per_second")
            if k["kernel"] == "copy" and v:
                metron_rates.append(v[0])
    except (OSError, ValueError, KeyError):
        pass
    ncu = suite.sh("ncu-pm-mix", ["ncu", "--cache-control", "none", "--clock-control", "none", "--metrics",
                                  "dram__bytes_read.sum,gpu__time_duration.sum", "--csv", "--print-units", "base",
                                  "--page", "raw", prog, "1", "1000"], timeout=150)
    want = ncu_copy_rate(ncu.out)
    if not metron_rates:
        rows["pm_vs_ncu"].set("no DRAM read samples inside a copy kernel", False)
    elif want is None:
        rows["pm_vs_ncu"].set(failure(ncu, "ncu"), False)
    else:
        got = sum(metron_rates) / len(metron_rates)
        rows["pm_vs_ncu"].set("Metron %.3g B/s, ncu %.3g B/s (x%.3f)" % (got, want, got / want), abs(got / want - 1) <= 0.10)


PC_CHECK = ("PC sampling against ncu", ["pc_stalls"], 120, PC_ROWS, run_pc)
ANNOTATIONS_CHECK = ("PC sampling annotations", ["pc_stalls", "pc_inline", "pc_inline.cubin"], 120,
                     ANNOTATION_ROWS, run_annotations)
PM_CHECK = ("PM sampling", ["pm_mix"], 90, PM_ROWS, run_pm)
