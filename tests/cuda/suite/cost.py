"""What Metron costs a CUDA program: the first launch under each GPU feature, the wall time a
counted region adds, and the per-launch cost of the default tracing over CUPTI's own floor.

`first_launch` runs one ~2 ms kernel per iteration inside a region, between CUDA events, and
prints each iteration's times; `metron_toggle` (under `metron run`) and `cupti_toggle` (CUPTI
alone) switch collection off and on between short bursts of empty launches in one process,
so the difference is measured on the same thread, core and minute.
"""

import re
import statistics

from runner import failure

FEATURES = [
    ("default", {}),
    ("pc", {"METRON_GPU_PC_SAMPLING": "on"}),
    ("pm", {"METRON_GPU_PM_SAMPLING": "on"}),
    ("kernel", {"METRON_GPU_METRICS": "smsp__inst_executed.sum"}),
    ("region", {"METRON_GPU_METRICS": "smsp__inst_executed.sum", "METRON_GPU_COUNTER_MODE": "region"}),
]
FEATURE_WORDS = {
    "default": "the default tracing",
    "pc": "PC sampling",
    "pm": "PM sampling",
    "kernel": "counters per kernel",
    "region": "counters per region",
}
ITERATIONS = "8"

FIRST_ROWS = [
    ("first_" + f, "First launch under %s" % FEATURE_WORDS[f],
     "the same run's later iterations (median)", "the first region at most 1 ms longer")
    for f, _ in FEATURES
] + [
    ("region_cost", "Wall time a counted region adds (region mode, one pass)",
     "the same program with no tool", "at most 50 µs per region"),
]

LAUNCH_ROWS = [
    ("launch_cost", "Per-launch cost of the default tracing (kernels, copies, API calls, region join)",
     "CUPTI's floor in the same call: kernel records + the join's launch callbacks (`cupti_toggle`)",
     "at most +100 ns over the floor (median of the repetitions)"),
]


def region_times(out):
    """Iteration -> the region's host wall time (ms) from first_launch's FIRST lines."""
    return {int(i): float(ms) for i, ms in re.findall(r"^FIRST iter=(\d+) .*region_ms=([\d.]+)", out, re.M)}


def run_first(suite, rows):
    prog = suite.program("first_launch")
    bare = suite.sh("first-none", [prog, ITERATIONS])
    bare_times = region_times(bare.out)
    for feature, env in FEATURES:
        row = rows["first_" + feature]
        done, _ = suite.metron("first-" + feature, [prog, ITERATIONS], env, timeout=90)
        times = region_times(done.out)
        if done.rc != 0 or len(times) < 3:
            row.set(failure(done, "metron run"), False)
            continue
        later = statistics.median(v for i, v in times.items() if i > 0)
        row.set("first %.3f ms, later median %.3f ms (%+.3f ms)" % (times[0], later, times[0] - later),
                times[0] - later <= 1.0)
        if feature == "region":
            cost = rows["region_cost"]
            if len(bare_times) < 3:
                cost.set(failure(bare, "first_launch"), False)
            else:
                base = statistics.median(v for i, v in bare_times.items() if i > 0)
                cost.set("%+.1f µs per region (median %.3f ms against %.3f ms)" % ((later - base) * 1e3, later, base),
                         (later - base) * 1e3 <= 50)


def floor_ns(out):
    """CUPTI's floor from cupti_toggle: kernel records over nothing (N -> K) plus the launch
    callbacks the join needs over kernel records (K -> KC)."""
    steps = {(a, b): float(v) for a, b, v in re.findall(r"^STEP (\S+)\s+-> (\S+)\s+([+-][\d.]+) ns", out, re.M)}
    if ("N", "K") in steps and ("K", "KC") in steps:
        return steps[("N", "K")] + steps[("K", "KC")]
    return None


def run_launch(suite, rows):
    row = rows["launch_cost"]
    rounds, launches, core = "400", "200", "3"
    over, floors, metrons, notes = [], [], [], []
    for rep in range(3):
        if suite.left() < 40:
            notes.append("%d repetitions in the time cap" % rep)
            break
        cupti = suite.sh("cupti-toggle-%d" % rep, [suite.program("cupti_toggle"), rounds, launches, core], timeout=60)
        metron, _ = suite.metron("metron-toggle-%d" % rep, [suite.program("metron_toggle"), rounds, launches, core], timeout=60)
        floor = floor_ns(cupti.out)
        diff = re.search(r"^TOGGLE .*diff_ns=([+-][\d.]+)", metron.out, re.M)
        if floor is None or not diff:
            notes.append(failure(cupti if floor is None else metron, "toggle"))
            continue
        floors.append(floor)
        metrons.append(float(diff.group(1)))
        over.append(metrons[-1] - floor)
    if not over:
        row.set("; ".join(notes) or "no repetition finished", False)
        return
    median = statistics.median(over)
    row.set("%+.0f ns (repetitions %s; floor %s ns, Metron %s ns)%s" % (
        median, ", ".join("%+.0f" % x for x in over), ", ".join("%+.0f" % x for x in floors),
        ", ".join("%+.0f" % x for x in metrons), ("; " + "; ".join(notes)) if notes else ""), median <= 100)


FIRST_CHECK = ("first launch and region cost", ["first_launch"], 120, FIRST_ROWS, run_first)
LAUNCH_CHECK = ("launch cost against CUPTI's floor", ["cupti_toggle", "metron_toggle"], 130, LAUNCH_ROWS, run_launch)
