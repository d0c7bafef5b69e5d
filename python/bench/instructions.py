"""Instructions per region block and per traced call, exact and repeatable under load.

    python3 python/bench/instructions.py

Runs each snippet under `valgrind --tool=callgrind` with N = 20,000 and N = 120,000 iterations
and divides the difference of the measuring thread's instruction counts by 100,000: start-up,
import and exit cancel out, and what is left is the per-iteration cost of the loop body minus an
empty loop's. Only the thread that runs the loop is counted (`--separate-threads`): the
runtime's own threads (Metron's consumer, which callgrind runs in turns with the loop) would add
instructions that depend on scheduling, not on the loop.
"""

import os
import re
import subprocess
import sys
import tempfile

SETUP = {
    "empty loop": ("", "pass"),
    "with metron.region(name)": ("import metron", "with metron.region('s'):\n            pass"),
    "with <a kept metron.region>": ("import metron\nr = metron.region('s')", "with r:\n            pass"),
    # The interpreter's floor: a context manager written in C (its calls take and release the lock).
    "floor: with <a threading.Lock()>": ("import threading\nr = threading.Lock()", "with r:\n            pass"),
    "@metron.profile call": (
        "import metron\n@metron.profile\ndef f():\n    return None",
        "f()",
    ),
    "plain call": ("def f():\n    return None", "f()"),
    "with nvtx.annotate(name)": ("import nvtx", "with nvtx.annotate('s'):\n            pass"),
    "traced call (Metron)": (
        "from metron import _functions\ndef f():\n    return None\n_functions.start(r'^__main__\\.f$')",
        "f()",
    ),
    "traced call (VizTracer)": (
        "from viztracer import VizTracer\ndef f():\n    return None\nv = VizTracer(verbose=0)\nv.start()",
        "f()",
    ),
}


def program(setup, body, n):
    return "%s\ndef loop(n):\n    for _ in range(n):\n        %s\nloop(%d)\n" % (setup, body, n)


def instructions(setup, body, n):
    out = tempfile.mkdtemp(prefix="metron-callgrind-")
    env = dict(os.environ, METRON_OUTPUT_PATH=os.path.join(out, "run"))
    env.pop("METRON_FUNCTIONS", None)
    done = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--separate-threads=yes",
            "--callgrind-out-file=" + os.path.join(out, "cg.out"),
            sys.executable,
            "-c",
            program(setup, body, n),
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    main_thread = os.path.join(out, "cg.out-01")
    m = None
    if done.returncode == 0 and os.path.exists(main_thread):
        with open(main_thread) as f:
            m = re.search(r"^(?:summary|totals): (\d+)", f.read(), re.M)
    if not m:
        raise RuntimeError(done.stderr[-2000:])
    return int(m.group(1))


def main():
    small, large = 20_000, 120_000
    per = {}
    for name, (setup, body) in SETUP.items():
        try:
            per[name] = (instructions(setup, body, large) - instructions(setup, body, small)) / (large - small)
        except RuntimeError as e:
            print("%s: left out (%s)" % (name, str(e).strip().splitlines()[-1] if str(e).strip() else "failed"))
    base = per.get("empty loop", 0)
    call = per.get("plain call", base)
    print("Python %s, instructions per iteration (callgrind, difference of %d and %d iterations)" % (sys.version.split()[0], large, small))
    for name, n in per.items():
        over = call if ("call" in name and name != "plain call") else base
        print("  %-32s %8.0f   (%+.0f over %s)" % (name, n, n - over, "a plain call" if over is call else "an empty loop"))


if __name__ == "__main__":
    main()
