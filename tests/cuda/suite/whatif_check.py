"""`metron whatif` against runs whose answer is constructed: `whatif_steps` (every part's
duration a parameter) and a PyTorch loop whose GPU sleep is a parameter. Each process
alternates two kinds of step: `step` (the baseline, from which the prediction is made) and
`alt` (`step_half` in PyTorch: the part actually shortened, the measured answer), so both
see the same process, minute and host state. Medians over the steps after the first WARM_UP
of each kind.
"""

import json
import os
import statistics

from runner import failure

WARM_UP = 2
STEPS = "60"
# streams mode: CPU 100 µs, A 400 µs on stream 1, B 200 µs on stream 2, C 100 µs on stream 2
# after an event on A: the step is CPU + max(A, B) + C, A critical until it is 50 % faster.
CPU, A, B, C = 100, 400, 200, 100

ROWS = [
    ("whatif_replay", "What-if: replay of an unchanged run (two streams, an event wait, a host sync)",
     "the recorded steps", "every step within 2 %; the host syncs taken from CUPTI's synchronization records"),
    ("whatif_kernel", "What-if: one kernel 10/25/50/75 % faster, predicted from the run's baseline steps",
     "steps of the same process with the kernel actually shortened", "each within 5 % (medians)"),
    ("whatif_off_path", "What-if: the kernel off the critical path 50 % faster",
     "steps with it shortened", "predicted gain 0 ± 1 %"),
    ("whatif_switch", "What-if: where the critical path switches streams",
     "the construction (A = B at 50 %)", "within 5 points"),
    ("whatif_launch", "What-if: a launch-bound step, its kernel 50 % faster",
     "steps with it shortened", "predicted gain at most 1 %"),
    ("whatif_cpu", "What-if: a CPU-bound step, its CPU region 50 % faster",
     "steps with it shortened", "within 5 %"),
    ("whatif_torch", "What-if: PyTorch loop, `torch.cuda._sleep` 50 % faster",
     "steps of the same process with the sleep halved", "within 10 %"),
]


def whatif(suite, folder, per, faster=()):
    """`metron whatif FOLDER --per PER --json` after the warm-up: the instances' (recorded,
    replayed, predicted) in ms; raises ValueError with the command's error."""
    cmd = [os.path.join(suite.bin, "metron"), "whatif", folder, "--per", per, "--json"]
    for f in faster:
        cmd += ["--faster", f]
    label = "-".join([os.path.basename(folder), per] + [f.replace("*", "").replace("%", "") for f in faster])
    done = suite.sh("whatif-" + label, cmd, timeout=120)
    if done.rc != 0:
        raise ValueError(failure(done, "metron whatif"))
    steps = json.loads(done.out)["per"]["instances"][WARM_UP:]
    return [(s["recorded_ns"] / 1e6, s["replayed_ns"] / 1e6, s["predicted_ns"] / 1e6) for s in steps]


def graph_counts(suite, folder):
    """The graph's counts (`metron whatif FOLDER --json`'s `graph`)."""
    cmd = [os.path.join(suite.bin, "metron"), "whatif", folder, "--json"]
    done = suite.sh("whatif-counts-" + os.path.basename(folder), cmd, timeout=120)
    if done.rc != 0:
        raise ValueError(failure(done, "metron whatif"))
    return json.loads(done.out)["graph"]


def median(rows, k):
    return statistics.median(r[k] for r in rows)


def record(suite, name, argv):
    done, folder = suite.metron("whatif-" + name, argv, timeout=90)
    if done.rc != 0:
        raise ValueError(failure(done, "metron run " + name))
    return folder


def predicted_and_measured(suite, folder, faster, base="step", alt="alt"):
    """(median baseline step, median predicted with `faster`, median measured changed step)."""
    steps = whatif(suite, folder, base, faster)
    changed = whatif(suite, folder, alt)
    return median(steps, 0), median(steps, 2), median(changed, 0)


def run(suite, rows):
    prog = suite.program("whatif_steps")

    def streams(a, b):
        return [prog, "streams", STEPS, str(CPU), str(A), str(B), str(C), str(CPU), str(a), str(b), str(C)]

    errors, parts, first = [], [], None
    for p in (10, 25, 50, 75):
        folder = record(suite, "a%d" % p, streams(A * (100 - p) / 100, B))
        first = first or folder
        base, predicted, measured = predicted_and_measured(suite, folder, ["spin_a*=%d%%" % p])
        err = (predicted - measured) / measured * 100
        errors.append(abs(err))
        parts.append("%d %%: %.3f vs %.3f ms (%+.1f %%)" % (p, predicted, measured, err))
        if p == 10:
            steps = whatif(suite, folder, "step")
            worst = max(abs(r[1] - r[0]) / r[0] for r in steps) * 100
            counts = graph_counts(suite, folder)
            recorded, inferred = counts.get("recorded_waits", 0), counts.get("waits_on_another_stream", 0)
            rows["whatif_replay"].set(
                "median step %.3f ms recorded, %.3f ms replayed; worst step %.2f %%; %d waits recorded by CUPTI, "
                "%d stream waits found from the times" % (median(steps, 0), median(steps, 1), worst, recorded, inferred),
                worst <= 2 and recorded > 0)
    rows["whatif_kernel"].set("step %.3f ms; " % base + "; ".join(parts), max(errors) <= 5)

    folder = record(suite, "b50", streams(A, B / 2))
    base, predicted, measured = predicted_and_measured(suite, folder, ["spin_b*=50%"])
    gain = (base - predicted) / base * 100
    rows["whatif_off_path"].set("predicted gain %+.2f %%, measured %+.2f %%" % (gain, (base - measured) / base * 100),
                                abs(gain) <= 1)

    curve = {p: median(whatif(suite, first, "step", ["spin_a*=%d%%" % p]), 2) for p in range(30, 80, 2)}
    flat = [p for p in sorted(curve) if curve[p] - curve[max(curve)] <= 0.002 * curve[min(curve)]]
    switch = flat[0] if flat else None
    true_switch = 100 * (A - B) / A
    rows["whatif_switch"].set("predicted at %s %%, constructed %.0f %%" % (switch, true_switch),
                              switch is not None and abs(switch - true_switch) <= 5)

    # Launch-bound: 40 × (CPU 20 µs, a 5 µs kernel) per step; `alt` with a 2.5 µs kernel.
    folder = record(suite, "launch", [prog, "launch", STEPS, "20", "5", "0", "0", "20", "2.5", "0", "0"])
    base, predicted, measured = predicted_and_measured(suite, folder, ["spin_a*=50%"])
    gain = (base - predicted) / base * 100
    rows["whatif_launch"].set("predicted gain %+.2f %%, measured %+.2f %% (step %.3f ms)" % (
        gain, (base - measured) / base * 100, base), gain <= 1)

    # CPU-bound: CPU 300 µs, a 100 µs kernel, CPU 300 µs; `alt` with 150 µs CPU parts.
    folder = record(suite, "cpu", [prog, "cpu", STEPS, "300", "100", "0", "0", "150", "100", "0", "0"])
    base, predicted, measured = predicted_and_measured(suite, folder, ["cpu=50%"])
    err = (predicted - measured) / measured * 100
    rows["whatif_cpu"].set("%.3f ms → predicted %.3f, measured %.3f ms (%+.1f %%)" % (base, predicted, measured, err),
                           abs(err) <= 5)


def run_torch(suite, rows):
    from python_checks import torch_missing

    row = rows["whatif_torch"]
    why = torch_missing(suite)
    if why:
        row.skip(why)
        return
    script = os.path.join(suite.cuda_tests, "torch_whatif.py")
    folder = record(suite, "torch", [suite.torch_python, script, "2000000", "40"])
    base, predicted, measured = predicted_and_measured(suite, folder, ["*spin_kernel*=50%"], alt="step_half")
    err = (predicted - measured) / measured * 100
    row.set("%.3f ms → predicted %.3f, measured %.3f ms (%+.1f %%)" % (base, predicted, measured, err), abs(err) <= 10)


def run_all(suite, rows):
    from runner import part

    part(suite, [r for k, r in rows.items() if k != "whatif_torch"], run, suite, rows)
    part(suite, [rows["whatif_torch"]], run_torch, suite, rows)


CHECK = ("what-if predictions", ["whatif_steps"], 200, ROWS, run_all)
