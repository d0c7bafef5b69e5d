#!/usr/bin/env python3
"""The start and the end of a run, measured as a program sees them (docs/src/performance.md,
"Start and end of a run").

Four measurements, each over interleaved runs so that a slow minute of the machine weighs on
every configuration alike:

  first    benches/c/start_end.c `first`: 8 threads released together, each timing its first
           metron_region_begin and spinning 20 us; each run reports its slowest thread. Median
           and p90 with Metron's defaults, METRON_TRACE=0 and METRON_ENABLED=0 (target: defaults
           within 1.3x of METRON_TRACE=0 at both).
  small    `start_end regions 100`, paired with METRON_ENABLED=0: the wall a small process pays
           (target: <= 1.5 ms over METRON_ENABLED=0 at the median of the paired differences).
  loop     a shell loop running `start_end regions 100` 300 times, under `metron run` and
           without it (target: <= 2 ms a process over the loop without Metron).
  quick    the quickstart example paired with METRON_ENABLED=0 (its ratio must not get worse:
           a median of x1.51 to x1.53 before).

Usage: scripts/bench-start-end.py [--runs N] [--loop-rounds N] [--lib DIR] [--metron PATH]
                                  [--quickstart PATH] [--only first,small,loop,quick] [--in DIR]
  --lib DIR       where libmetron.so is (default target/release; build it with
                  `cargo build --release -p metron-user`)
  --metron PATH   the `metron` command (default target/release/metron)
  --in DIR        where the run folders go (e.g. /dev/shm: the process's own cost without the
                  file system's; default: the system's temporary folder)
  --quickstart PATH  the quickstart example (default target/release/examples/quickstart;
                  `cargo build --release -p metron-examples --example quickstart`)
Run folders are kept until the script ends: on ext4 without a journal (this VM's disk), a
file created within a few seconds of deletions nearby costs 0.35-0.45 ms instead of 40-80 us
(the inode allocator skips recently deleted inodes, reading their inode blocks), so deleting
each run's folder right after it would charge every run for its predecessor's cleanup.
Wall times come from time.perf_counter around each child (fork, exec, wait): the same for
every configuration, and cancelled by the pairing. Run it on a quiet machine.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def percentile(values, p):
    values = sorted(values)
    k = (len(values) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def build(lib, out):
    exe = os.path.join(out, "start_end")
    subprocess.run(
        [
            os.environ.get("CC", "cc"),
            "-O2",
            "-o",
            exe,
            os.path.join(REPO, "benches/c/start_end.c"),
            "-I" + os.path.join(REPO, "user-api/include"),
            "-L" + lib,
            "-lmetron",
            "-lpthread",
            "-Wl,-rpath," + os.path.abspath(lib),
        ],
        check=True,
    )
    return exe


def fresh_folder(work):
    """A run folder's name under `work`, not yet made: nothing is created or deleted between
    runs (see KEEP_FOLDERS)."""
    fresh_folder.count += 1
    return os.path.join(work, "run-%d" % fresh_folder.count)


fresh_folder.count = 0


def run(cmd, env, work):
    """Wall seconds of `cmd` and its stdout; its run folder stays until the script ends."""
    folder = fresh_folder(work)
    full = dict(os.environ, METRON_OUTPUT_PATH=folder, **env)
    start = time.perf_counter()
    done = subprocess.run(cmd, env=full, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit("%s failed (%d)" % (" ".join(cmd), done.returncode))
    return wall, done.stdout.decode()


def first(exe, runs, work):
    configs = [("defaults", {}), ("METRON_TRACE=0", {"METRON_TRACE": "0"}), ("METRON_ENABLED=0", {"METRON_ENABLED": "0"})]
    slowest = {name: [] for name, _ in configs}
    for _ in range(runs):
        for name, env in configs:
            _, out = run([exe, "first"], env, work)
            slowest[name].append(int(out.split()[0]) / 1000)
    print("## slowest first metron_region_begin of 8 threads, %d interleaved runs (us)" % runs)
    print("| configuration | median | p75 | p90 | max |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, _ in configs:
        v = slowest[name]
        print(
            "| %s | %.0f | %.0f | %.0f | %.0f |"
            % (name, statistics.median(v), percentile(v, 75), percentile(v, 90), max(v))
        )
    d, t = slowest["defaults"], slowest["METRON_TRACE=0"]
    print(
        "defaults / METRON_TRACE=0: median x%.2f, p90 x%.2f (target <= x1.3)"
        % (statistics.median(d) / statistics.median(t), percentile(d, 90) / percentile(t, 90))
    )


def paired(label, cmd, runs, work):
    on, off, diff = [], [], []
    for _ in range(runs):
        a, _ = run(cmd, {}, work)
        b, _ = run(cmd, {"METRON_ENABLED": "0"}, work)
        on.append(a * 1e3)
        off.append(b * 1e3)
        diff.append((a - b) * 1e3)
    print(
        "%s, %d paired runs: %.2f ms against %.2f ms with METRON_ENABLED=0 (medians): "
        "x%.2f; the paired difference's median %.2f ms (p25 %.2f, p75 %.2f)"
        % (
            label,
            runs,
            statistics.median(on),
            statistics.median(off),
            statistics.median(on) / statistics.median(off),
            statistics.median(diff),
            percentile(diff, 25),
            percentile(diff, 75),
        )
    )


def loop(exe, metron, rounds, work):
    script = "for i in $(seq 300); do %s regions 100; done" % exe
    with_metron, without = [], []
    for _ in range(rounds):
        folder = fresh_folder(work)
        start = time.perf_counter()
        subprocess.run(
            [metron, "run", "-o", folder, "--", "sh", "-c", script],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=True,
        )
        with_metron.append(time.perf_counter() - start)
        size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(folder) for f in fs)
        start = time.perf_counter()
        subprocess.run(
            ["sh", "-c", script],
            env=dict(os.environ, METRON_ENABLED="0"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=True,
        )
        without.append(time.perf_counter() - start)
    a, b = statistics.median(with_metron), statistics.median(without)
    print(
        "300 processes of 100 regions, %d rounds: %.2f s under `metron run` against %.2f s "
        "(METRON_ENABLED=0): %.2f ms a process over (target <= 2 ms); %.1f MB written"
        % (rounds, a, b, (a - b) / 300 * 1e3, size / 1e6)
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--loop-rounds", type=int, default=3)
    ap.add_argument("--lib", default=os.path.join(REPO, "target/release"))
    ap.add_argument("--metron", default=os.path.join(REPO, "target/release/metron"))
    ap.add_argument("--quickstart", default=os.path.join(REPO, "target/release/examples/quickstart"))
    ap.add_argument("--only", default="first,small,loop,quick")
    ap.add_argument(
        "--in",
        dest="under",
        default=None,
        help="where the run folders go (default: the system's temporary folder); /dev/shm "
        "separates Metron's own cost from the file system's",
    )
    args = ap.parse_args()
    parts = args.only.split(",")
    work = tempfile.mkdtemp(prefix="metron-start-end.", dir=args.under)
    try:
        exe = build(args.lib, work)
        if "first" in parts:
            first(exe, args.runs, work)
        if "small" in parts:
            paired("a process recording 100 regions", [exe, "regions", "100"], args.runs, work)
        if "loop" in parts:
            loop(exe, args.metron, args.loop_rounds, work)
        if "quick" in parts:
            paired("the quickstart", [args.quickstart], max(15, args.runs // 2), work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
