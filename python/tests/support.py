"""Runs a Python program in a fresh process with Metron's run folder in a temporary directory
and reads what it wrote."""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(HERE, "programs")
REPO = os.path.dirname(os.path.dirname(HERE))


def libmetron():
    """target/release/libmetron.so, the C runtime `metron run` preloads (None when not built)."""
    path = os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO, "target")), "release", "libmetron.so")
    return path if os.path.exists(path) else None


class Run:
    def __init__(self, folder, completed):
        self.folder = folder
        self.completed = completed
        self.stdout = completed.stdout
        self.stderr = completed.stderr

    def json(self, name):
        with open(os.path.join(self.folder, name)) as f:
            return json.load(f)

    def summary(self):
        return self.json("summary.json")

    def metadata(self):
        return self.json("metadata.json")

    def region_counts(self):
        """Region name -> count over every thread and nesting level."""
        counts = {}

        def walk(nodes):
            for node in nodes:
                counts[node["name"]] = counts.get(node["name"], 0) + node["count"]
                walk(node.get("children", []))

        for thread in self.summary()["threads"]:
            walk(thread["regions"])
        return counts

    def region_totals_ns(self):
        totals = {}

        def walk(nodes):
            for node in nodes:
                wall = node["metrics"]["wall_clock.elapsed"]
                totals[node["name"]] = totals.get(node["name"], 0) + wall["total"]
                walk(node.get("children", []))

        for thread in self.summary()["threads"]:
            walk(thread["regions"])
        return totals


def run_python(code_or_path, env=None, args=(), python=None, preload=False, check=True):
    """Runs `code_or_path` (a program file, or source text) and returns its Run."""
    tmp = tempfile.mkdtemp(prefix="metron-python-")
    folder = os.path.join(tmp, "run")
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("METRON_")}
    full_env["METRON_OUTPUT_PATH"] = folder
    if preload:
        full_env["LD_PRELOAD"] = libmetron()
        full_env["METRON_PRELOAD"] = "1"
    full_env.update(env or {})
    if os.path.exists(code_or_path):
        cmd = [python or sys.executable, code_or_path, *args]
    else:
        cmd = [python or sys.executable, "-c", code_or_path, *args]
    completed = subprocess.run(cmd, env=full_env, capture_output=True, text=True, timeout=300, cwd=tmp)
    if check and completed.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s\n%s" % (cmd, completed.returncode, completed.stdout, completed.stderr))
    return Run(folder, completed)
