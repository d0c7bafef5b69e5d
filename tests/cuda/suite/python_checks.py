"""Python programs: a launch-bound PyTorch step against no tool and against torch.profiler
(Kineto), the kernels of a PyTorch training loop against torch.profiler's, the outputs of the same loop
under `metron sample`, and Python frames in `metron sample`'s stacks. They use the GPU machine's PyTorch Python (`--python`)."""

import collections
import csv
import json
import os
import re
import statistics
import subprocess
import sys
import time

from runner import failure

STEP_ROWS = [
    ("torch_step", "Launch-bound PyTorch step under `metron run` (defaults)",
     "the same step with no tool (interleaved processes, median of medians)", "at most x1.15"),
    ("torch_vs_kineto", "The same step: Metron against torch.profiler",
     "torch.profiler with CUDA activities (Kineto), same rounds", "Metron's ratio at most Kineto's"),
    ("torch_sync_records", "The same step: the cost of recording what waited for what (METRON_GPU_SYNC)",
     "Metron with METRON_GPU_SYNC=off, same rounds", "at most x1.02"),
]
KERNEL_ROWS = [
    ("torch_kernels", "Kernels of a PyTorch training loop (20 AdamW steps)",
     "torch.profiler's kernel events of the same loop", "the same kernels, the same number of times"),
]
SAMPLED_ROWS = [
    ("torch_sampled_outputs", "Outputs of a sampled PyTorch loop (`metron sample -- python3 torch_train.py`)",
     "the same program with no tool: from its last statement (CLOCK_MONOTONIC) to its exit; the files' sizes",
     "summary.json at most 5 MB; flamegraph.svg and report.html written; the run ends at most 1 s later than the program alone"),
]
FRAME_ROWS = [
    ("python_frames", "Python frames in sampled stacks (`metron sample -- python3`)",
     "the workload's own 3:1 split of CPU time between `hot` and `cold`", "`py::hot` 75 % +- 5 points"),
]


def torch_missing(suite):
    """None when the PyTorch Python imports torch with CUDA, else the reason."""
    try:
        p = subprocess.run([suite.torch_python, "-c", "import torch; assert torch.cuda.is_available()"],
                           capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return "%s: %s" % (suite.torch_python, e)
    return None if p.returncode == 0 else "no PyTorch with CUDA in %s" % suite.torch_python


def run_step(suite, rows):
    why = torch_missing(suite)
    if why:
        for row in rows.values():
            row.skip(why)
        return
    step = os.path.join(suite.cuda_tests, "torch_step.py")
    medians = collections.defaultdict(list)
    for r in range(3):
        if suite.left() < 45:
            break
        for config in ("none", "metron", "metron_nosync", "kineto"):
            args = [suite.torch_python, step, "kineto" if config == "kineto" else "plain", "200"]
            if config.startswith("metron"):
                env = {"METRON_GPU_SYNC": "off"} if config == "metron_nosync" else None
                done, _ = suite.metron("torch-step-%s-%d" % (config, r), args, env=env, timeout=90)
            else:
                done = suite.sh("torch-step-%s-%d" % (config, r), args, timeout=90)
            m = re.search(r"median_ms=([\d.]+)", done.out)
            if m:
                medians[config].append(float(m.group(1)))
    if not medians["none"] or not medians["metron"]:
        rows["torch_step"].set("no complete round (see logs/torch-step-*)", False)
        rows["torch_vs_kineto"].set("no complete round", False)
        return
    base = statistics.median(medians["none"])
    metron = statistics.median(medians["metron"]) / base
    rows["torch_step"].set("x%.3f (no tool %.3f ms; %d rounds)" % (metron, base, len(medians["metron"])), metron <= 1.15)
    if medians["metron_nosync"]:
        sync = statistics.median(medians["metron"]) / statistics.median(medians["metron_nosync"])
        rows["torch_sync_records"].set("x%.3f (%.3f ms with, %.3f ms without)" % (
            sync, statistics.median(medians["metron"]), statistics.median(medians["metron_nosync"])), sync <= 1.02)
    else:
        rows["torch_sync_records"].set("no complete round", False)
    if medians["kineto"]:
        kineto = statistics.median(medians["kineto"]) / base
        rows["torch_vs_kineto"].set("Metron x%.3f, Kineto x%.3f" % (metron, kineto), metron <= kineto)
    else:
        rows["torch_vs_kineto"].set("Kineto's rounds did not finish", False)


def base_name(name):
    name = name.strip()
    if name.startswith("void "):
        name = name[5:]
    return name.split("(")[0].strip()


def run_kernels(suite, rows):
    row = rows["torch_kernels"]
    why = torch_missing(suite)
    if why:
        row.skip(why)
        return
    train = os.path.join(suite.cuda_tests, "torch_train.py")
    counts_json = os.path.join(suite.work, "torch_profiler_kernels.json")
    prof = suite.sh("torch-train-profiler", [suite.torch_python, train, "profile", counts_json], timeout=120)
    done, folder = suite.metron("torch-train", [suite.torch_python, train, "plain"], timeout=120)
    if prof.rc != 0 or not os.path.exists(counts_json):
        row.set(failure(prof, "torch.profiler"), False)
        return
    if done.rc != 0 or not os.path.exists(os.path.join(folder, "kernels.csv")):
        row.set(failure(done, "metron run"), False)
        return
    want = collections.Counter()
    for name, n in json.load(open(counts_json)).items():
        want[base_name(name)] += n
    with open(os.path.join(folder, "kernels.csv"), encoding="utf-8") as f:
        # kernels.csv's Method is "<kernel name> [<device name>]".
        got = collections.Counter(base_name(re.sub(r" \[[^\[\]]*\]$", "", r["Method"]))
                                  for r in csv.DictReader(l for l in f if not l.startswith("#")))
    differ = sorted(k for k in set(want) | set(got) if want[k] != got[k])
    row.set("Metron %d launches of %d kernels, torch.profiler %d of %d%s" % (
        sum(got.values()), len(got), sum(want.values()), len(want),
        ("; differ (Metron/torch.profiler): " + "; ".join("%s %d/%d" % (k, got[k], want[k]) for k in differ[:6])) if differ else ""),
        not differ and sum(got.values()) > 0)


def run_sampled_outputs(suite, rows):
    row = rows["torch_sampled_outputs"]
    why = torch_missing(suite)
    if why:
        row.skip(why)
        return
    folder = suite.run_dir("torch-sampled")
    train = os.path.join(suite.cuda_tests, "torch_train.py")
    done = suite.sh("torch-sampled", [os.path.join(suite.bin, "metron"), "sample", "-o", folder,
                                      "--", suite.torch_python, train, "plain"], timeout=150)
    ended = time.monotonic()
    program_end = re.search(r"TORCH_TRAIN plain .* end_monotonic ([\d.]+)", done.out)
    summary = os.path.join(folder, "summary.json")
    if done.rc != 0 or not program_end or not os.path.exists(summary):
        row.set(failure(done, "metron sample"), False)
        return
    tail = ended - float(program_end.group(1))
    # The program's own end takes time too (PyTorch and the CUDA driver tear down after the
    # last statement): the same loop with no tool is the baseline.
    alone = suite.sh("torch-sampled-alone", [suite.torch_python, train, "plain"], timeout=150)
    alone_ended = time.monotonic()
    alone_end = re.search(r"TORCH_TRAIN plain .* end_monotonic ([\d.]+)", alone.out)
    if alone.rc != 0 or not alone_end:
        row.set(failure(alone, "python3 torch_train.py"), False)
        return
    own_tail = alone_ended - float(alone_end.group(1))
    mb = os.path.getsize(summary) / 1e6
    pictures = [f for f in ("flamegraph.svg", "report.html") if os.path.exists(os.path.join(folder, f))]
    stacks = os.path.join(folder, "stacks.folded")
    distinct = sum(1 for _ in open(stacks, encoding="utf-8", errors="replace")) if os.path.exists(stacks) else 0
    row.set("summary.json %.2f MB, %d distinct stacks, pictures: %s; %.2f s from the last statement to the end "
            "(alone %.2f s): %+.2f s" % (mb, distinct, ", ".join(pictures) or "none", tail, own_tail, tail - own_tail),
            mb <= 5 and len(pictures) == 2 and tail - own_tail <= 1.0)


def run_frames(suite, rows):
    row = rows["python_frames"]
    version = suite.sh("python-version", [suite.torch_python, "-c", "import sys; print(sys.version_info >= (3, 12))"], timeout=30)
    if version.out.strip() != "True":
        row.skip("%s has no perf trampolines (Python 3.12 or later needed)" % suite.torch_python)
        return
    folder = suite.run_dir("python-frames")
    done = suite.sh("python-frames", [os.path.join(suite.bin, "metron"), "sample", "-o", os.path.join(folder, "%exe%-%pid%"),
                                      "--", suite.torch_python, os.path.join(suite.repo, "tests", "python", "py_shares.py"), "3"],
                    timeout=90)
    check = suite.sh("check-python-frames", [sys.executable, os.path.join(suite.repo, "tests", "python", "check_py_shares.py"),
                                             folder], timeout=60)
    share = re.search(r"py::hot share ([\d.]+) %", check.out)
    if not share:
        row.set(failure(check if done.rc == 0 else done, "metron sample"), False)
        return
    row.set("py::hot %s %%" % share.group(1), check.rc == 0)


STEP_CHECK = ("PyTorch step cost", [], 150, STEP_ROWS, run_step)
KERNEL_CHECK = ("PyTorch kernels", [], 90, KERNEL_ROWS, run_kernels)
SAMPLED_CHECK = ("Sampled PyTorch outputs", [], 150, SAMPLED_ROWS, run_sampled_outputs)
FRAME_CHECK = ("Python frames", [], 60, FRAME_ROWS, run_frames)
