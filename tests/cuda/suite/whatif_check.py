"""`metron whatif` against runs whose answer is constructed: `whatif_steps` (every part's
duration a parameter) and a PyTorch loop whose GPU sleep is a parameter. One run predicts;
runs with the part actually shortened are the measured answers. Steps are Metron regions;
the first WARM_UP steps of every run are left out of every mean.
"""

import json
import os
import statistics

from runner import failure

WARM_UP = 3
STEPS = "40"
# streams mode: CPU 100 µs, A 400 µs on stream 1, B 200 µs on stream 2, C 100 µs on stream 2
# after an event on A: the step is CPU + max(A, B) + C, A critical until it is 50 % faster.
CPU, A, B, C = 100, 400, 200, 100

ROWS = [
    ("whatif_replay", "What-if: replay of an unchanged run (two streams, an event wait, a host sync)",
     "the recorded steps", "every step within 2 %"),
    ("whatif_kernel", "What-if: one kernel 10/25/50/75 % faster, predicted from one run",
     "runs with the kernel actually shortened", "each mean step within 5 %"),
    ("whatif_off_path", "What-if: the kernel off the critical path 50 % faster",
     "a run with it shortened", "predicted gain 0 ± 1 %"),
    ("whatif_switch", "What-if: where the critical path switches streams",
     "the construction (A = B at 50 %)", "within 5 points"),
    ("whatif_launch", "What-if: a launch-bound step, its kernel 50 % faster",
     "a run with it shortened", "predicted gain at most 1 %"),
    ("whatif_cpu", "What-if: a CPU-bound step, its CPU region 50 % faster",
     "a run with it shortened", "within 5 %"),
    ("whatif_torch", "What-if: PyTorch loop, `torch.cuda._sleep` 50 % faster",
     "a run with the sleep halved", "within 10 %"),
]


def whatif(suite, folder, faster=(), per="step"):
    """`metron whatif FOLDER --json`: (mean recorded, mean replayed, mean predicted) of the
    steps after the warm-up, ms; raises ValueError with the command's error."""
    cmd = [os.path.join(suite.bin, "metron"), "whatif", folder, "--per", per, "--json"]
    for f in faster:
        cmd += ["--faster", f]
    done = suite.sh("whatif-" + os.path.basename(folder) + "-" + "-".join(faster).replace("*", "").replace("%", ""), cmd, timeout=120)
    if done.rc != 0:
        raise ValueError(failure(done, "metron whatif"))
    steps = json.loads(done.out)["per"]["instances"][WARM_UP:]
    mean = lambda k: statistics.mean(s[k] for s in steps) / 1e6  # noqa: E731
    return mean("recorded_ns"), mean("replayed_ns"), mean("predicted_ns"), steps


def record(suite, name, argv):
    done, folder = suite.metron("whatif-" + name, argv, timeout=90)
    if done.rc != 0:
        raise ValueError(failure(done, "metron run " + name))
    return folder


def run(suite, rows):
    prog = suite.program("whatif_steps")
    streams = lambda a, b: [prog, "streams", STEPS, str(CPU), str(a), str(b), str(C)]  # noqa: E731
    try:
        base = record(suite, "base", streams(A, B))
        recorded, replayed, _, steps = whatif(suite, base)
    except ValueError as e:
        for row in rows.values():
            row.set(str(e), False)
        return
    worst = max(abs(s["replayed_ns"] - s["recorded_ns"]) / s["recorded_ns"] for s in steps) * 100
    rows["whatif_replay"].set("mean step %.3f ms recorded, %.3f ms replayed; worst step %.2f %%" % (recorded, replayed, worst),
                              worst <= 2)

    errors, parts = [], []
    for p in (10, 25, 50, 75):
        _, _, predicted, _ = whatif(suite, base, ["spin_a*=%d%%" % p])
        folder = record(suite, "a%d" % p, streams(A * (100 - p) / 100, B))
        measured, _, _, _ = whatif(suite, folder)
        err = (predicted - measured) / measured * 100
        errors.append(abs(err))
        parts.append("%d %%: %.3f vs %.3f ms (%+.1f %%)" % (p, predicted, measured, err))
    rows["whatif_kernel"].set("base %.3f ms; " % recorded + "; ".join(parts), max(errors) <= 5)

    _, _, predicted, _ = whatif(suite, base, ["spin_b*=50%"])
    folder = record(suite, "b50", streams(A, B / 2))
    measured, _, _, _ = whatif(suite, folder)
    gain = (recorded - predicted) / recorded * 100
    rows["whatif_off_path"].set("predicted gain %+.2f %%, measured %+.2f %%" % (gain, (recorded - measured) / recorded * 100),
                                abs(gain) <= 1)

    curve = {}
    for p in range(30, 80, 2):
        curve[p] = whatif(suite, base, ["spin_a*=%d%%" % p])[2]
    flat = [p for p in sorted(curve) if curve[p] - curve[max(curve)] <= 0.002 * recorded]
    switch = flat[0] if flat else None
    true_switch = 100 * (A - B) / A
    rows["whatif_switch"].set("predicted at %s %%, constructed %.0f %%" % (switch, true_switch),
                              switch is not None and abs(switch - true_switch) <= 5)

    # Launch-bound: 40 × (CPU 20 µs, a 5 µs kernel) per step.
    launch = record(suite, "launch", [prog, "launch", STEPS, "20", "5", "0", "0"])
    l_rec, _, l_pred, _ = whatif(suite, launch, ["spin_a*=50%"])
    l_meas = whatif(suite, record(suite, "launch-half", [prog, "launch", STEPS, "20", "2.5", "0", "0"]))[0]
    gain = (l_rec - l_pred) / l_rec * 100
    rows["whatif_launch"].set("predicted gain %+.2f %%, measured %+.2f %% (step %.3f ms)" % (
        gain, (l_rec - l_meas) / l_rec * 100, l_rec), gain <= 1)

    # CPU-bound: CPU 300 µs, a 100 µs kernel, CPU 300 µs.
    cpu = record(suite, "cpu", [prog, "cpu", STEPS, "300", "100", "0", "0"])
    c_rec, _, c_pred, _ = whatif(suite, cpu, ["cpu=50%"])
    c_meas = whatif(suite, record(suite, "cpu-half", [prog, "cpu", STEPS, "150", "100", "0", "0"]))[0]
    err = (c_pred - c_meas) / c_meas * 100
    rows["whatif_cpu"].set("%.3f ms → predicted %.3f, measured %.3f ms (%+.1f %%)" % (c_rec, c_pred, c_meas, err), abs(err) <= 5)


def run_torch(suite, rows):
    from python_checks import torch_missing

    row = rows["whatif_torch"]
    why = torch_missing(suite)
    if why:
        row.skip(why)
        return
    script = os.path.join(suite.cuda_tests, "torch_whatif.py")
    try:
        base = record(suite, "torch", [suite.torch_python, script, "2000000"])
        rec, _, pred, _ = whatif(suite, base, ["*spin_kernel*=50%"])
        meas = whatif(suite, record(suite, "torch-half", [suite.torch_python, script, "1000000"]))[0]
    except ValueError as e:
        row.set(str(e), False)
        return
    err = (pred - meas) / meas * 100
    row.set("%.3f ms → predicted %.3f, measured %.3f ms (%+.1f %%)" % (rec, pred, meas, err), abs(err) <= 10)


def run_all(suite, rows):
    from runner import part

    part(suite, [r for k, r in rows.items() if k != "whatif_torch"], run, suite, rows)
    part(suite, [rows["whatif_torch"]], run_torch, suite, rows)


CHECK = ("what-if predictions", ["whatif_steps"], 200, ROWS, run_all)
