"""The frame of the GPU validation suite: commands with time limits, rows of results, the
suite's time budget, and the table.

Every check is a function that fills its own rows. A check that raises, or whose programs did
not build, leaves its rows as ERROR or SKIP with the reason; the other checks run on. Each
command gets the smaller of its own limit and what is left of the suite's budget, so the whole
suite ends inside one device call.
"""

import dataclasses
import os
import signal
import subprocess
import time
import traceback


@dataclasses.dataclass
class Row:
    """One line of the table: what is checked, against what, what passes, what was measured."""

    key: str
    check: str
    oracle: str
    expected: str
    measured: str = "not run"
    result: str = "SKIP"  # PASS, FAIL, SKIP (not measurable here, with the reason) or ERROR

    def set(self, measured, ok):
        self.measured = measured
        self.result = "PASS" if ok else "FAIL"

    def skip(self, why):
        self.measured = why
        self.result = "SKIP"


@dataclasses.dataclass
class Check:
    """A group of rows measured together (they share runs), its programs and its time cap."""

    name: str
    programs: list
    seconds: int
    rows: list
    run: object  # run(suite, rows: dict key -> Row)


@dataclasses.dataclass
class Done:
    rc: int
    out: str
    err: str
    seconds: float
    timed_out: bool


class Suite:
    """What every check needs: the staged binaries, a work folder, the budget and a log."""

    def __init__(self, bin_dir, work, budget_s, torch_python):
        self.bin = os.path.abspath(bin_dir)
        self.work = os.path.abspath(work)
        here = os.path.dirname(os.path.abspath(__file__))  # tests/cuda/suite
        self.repo = os.path.dirname(os.path.dirname(os.path.dirname(here)))
        self.cuda_tests = os.path.join(self.repo, "tests", "cuda")
        self.deadline = time.monotonic() + budget_s
        self.torch_python = torch_python
        self.programs = {}  # name -> path of a built program
        self.build_errors = {}  # name -> the compiler's last lines
        self.check_deadline = self.deadline
        os.makedirs(os.path.join(self.work, "logs"), exist_ok=True)
        os.makedirs(os.path.join(self.work, "runs"), exist_ok=True)
        self.log_file = open(os.path.join(self.work, "logs", "suite.log"), "a", encoding="utf-8")

    def left(self):
        return min(self.deadline, self.check_deadline) - time.monotonic()

    def log(self, text):
        line = "%s %s" % (time.strftime("%H:%M:%S"), text)
        print(line, flush=True)
        self.log_file.write(line + "\n")
        self.log_file.flush()

    def sh(self, name, argv, env=None, timeout=120, cwd=None):
        """Runs `argv` with `env` added, stdout and stderr kept in logs/NAME.{out,err}. Never
        raises on a failing command: the caller reads rc and the output."""
        limit = max(1.0, min(timeout, self.left()))
        full_env = dict(os.environ)
        full_env.update(env or {})
        self.log("run %s: %s%s (limit %.0f s)" % (
            name, " ".join("%s=%s" % kv for kv in (env or {}).items()) + " " if env else "",
            " ".join(argv), limit))
        t0 = time.monotonic()
        try:
            # A session of its own, so that a command past its limit is ended with everything
            # it started (the program under `metron run`, ncu's target), not only itself.
            p = subprocess.Popen(argv, env=full_env, cwd=cwd or self.work, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, errors="replace",
                                 start_new_session=True)
        except OSError as e:
            p = None
            done = Done(127, "", str(e), time.monotonic() - t0, False)
        if p is not None:
            try:
                out, err = p.communicate(timeout=limit)
                done = Done(p.returncode, out, err, time.monotonic() - t0, False)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except OSError:
                    pass
                out, err = p.communicate()
                done = Done(124, out or "", err or "", time.monotonic() - t0, True)
        base = os.path.join(self.work, "logs", name)
        with open(base + ".out", "w", encoding="utf-8") as f:
            f.write(done.out)
        with open(base + ".err", "w", encoding="utf-8") as f:
            f.write(done.err)
        self.log("  %s: rc=%d in %.1f s%s" % (name, done.rc, done.seconds, " (timed out)" if done.timed_out else ""))
        return done

    def run_dir(self, name):
        return os.path.join(self.work, "runs", name)

    def metron(self, name, argv, env=None, timeout=120):
        """`metron run` of argv into runs/NAME (METRON_OUTPUT_PATH); returns (Done, folder)."""
        folder = self.run_dir(name)
        env = dict(env or {})
        env["METRON_OUTPUT_PATH"] = folder
        cmd = [os.path.join(self.bin, "metron"), "run", "--library",
               os.path.join(self.bin, "libmetron.so"), "--"] + list(argv)
        return self.sh(name, cmd, env=env, timeout=timeout), folder

    def program(self, name):
        return self.programs[name]


def failure(done, what):
    """A short reason for a failed command: its status and the last line it wrote."""
    last = (done.err.strip().splitlines() or done.out.strip().splitlines() or [""])[-1]
    reason = "timed out" if done.timed_out else "rc=%d" % done.rc
    return "%s %s: %s" % (what, reason, last[:160])


# What a run that wrote nothing, or something unreadable, raises when its outputs are read.
UNREADABLE = (OSError, ValueError, KeyError, IndexError)


def part(suite, rows, fn, *args):
    """Runs one independent part of a check: when the outputs it reads are missing or
    unreadable, its rows not yet measured fail with the reason, and the next part runs."""
    try:
        fn(*args)
    except UNREADABLE as e:
        suite.log(traceback.format_exc())
        for row in rows:
            if row.measured == "not run":
                row.set("the run's outputs could not be read: %s: %s" % (type(e).__name__, str(e)[:160]), False)


def run_checks(suite, checks):
    """Runs each check in order inside its time cap; returns every row."""
    rows = []
    for check in checks:
        mine = {key: Row(key, c, o, e) for key, c, o, e in check.rows}
        rows += mine.values()
        missing = [p for p in check.programs if p not in suite.programs]
        if missing:
            why = "; ".join("%s did not build: %s" % (p, suite.build_errors.get(p, "?")) for p in missing)
            for row in mine.values():
                row.result, row.measured = "ERROR", why[:300]
            continue
        if suite.deadline - time.monotonic() < min(30, check.seconds):
            for row in mine.values():
                row.skip("the suite's time budget was spent before this check")
            continue
        suite.check_deadline = time.monotonic() + check.seconds
        suite.log("== %s (at most %d s)" % (check.name, check.seconds))
        try:
            part(suite, list(mine.values()), check.run, suite, mine)
        except Exception as e:  # a broken check is a row, never the end of the suite
            suite.log(traceback.format_exc())
            for row in mine.values():
                if row.result == "SKIP" and row.measured == "not run":
                    row.result, row.measured = "ERROR", "%s: %s" % (type(e).__name__, str(e)[:200])
        finally:
            suite.check_deadline = suite.deadline
    return rows


def table(rows):
    """The rows as a Markdown table."""
    def cell(text):
        return str(text).replace("|", "\\|").replace("\n", " ")
    lines = ["| check | oracle | expected | measured | result |", "| --- | --- | --- | --- | --- |"]
    for r in rows:
        lines.append("| %s |" % " | ".join(cell(x) for x in (r.check, r.oracle, r.expected, r.measured, r.result)))
    return "\n".join(lines)
