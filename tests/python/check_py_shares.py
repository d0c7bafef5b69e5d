"""Prints the shares of `py::hot` and `py::cold` in a run folder of `py_shares.py`.

Usage: python3 check_py_shares.py RUN_FOLDER

A sample counts for a function when its stack holds the function's frame
(`py::hot (py_shares.py:14)`), whichever frames are below it (the interpreter's). Exit status
0 when the hot share is 75 % within +-5 points, 1 otherwise, 2 when the folder has no Python
frames at all (perf support off or not working: the frames are then `[unknown]+0x7f...`).
"""

import json
import pathlib
import sys


def counts(folded):
    """(hot, cold, other) samples of one stacks.folded."""
    hot = cold = other = 0
    for line in folded.read_text().splitlines():
        stack, n = line.rsplit(" ", 1)
        frames = stack.split(";")
        n = int(n)
        if any(f.startswith("py::hot ") for f in frames):
            hot += n
        elif any(f.startswith("py::cold ") for f in frames):
            cold += n
        else:
            other += n
    return hot, cold, other


def main(folder):
    folder = pathlib.Path(folder)
    # The run folder of the Python process: the folder itself, or (a launcher script such as
    # pyenv's shim makes a process tree) the subfolder with the most samples.
    runs = sorted(folder.rglob("stacks.folded"), key=lambda f: -sum(counts(f)))
    if not runs:
        print(f"FAIL: no stacks.folded under {folder}")
        return 2
    hot, cold, other = counts(runs[0])
    print(f"run folder: {runs[0].parent}")
    metadata = json.loads((runs[0].parent / "metadata.json").read_text())
    setting = next(
        (s.get("value") for s in metadata.get("settings", []) if s.get("name") == "METRON_SAMPLING_PYTHON"),
        None,
    )
    jit = metadata.get("outputs", {}).get("stacks", {}).get("jit")
    print(f"METRON_SAMPLING_PYTHON: {setting}")
    print(f"outputs.stacks.jit: {jit}")
    print(f"samples: py::hot {hot}, py::cold {cold}, elsewhere {other}")
    if hot + cold == 0:
        print("FAIL: no py:: frames in stacks.folded")
        return 2
    share = 100.0 * hot / (hot + cold)
    ok = 70.0 <= share <= 80.0
    print(f"py::hot share {share:.1f} % (expected 75 +- 5): {'PASS' if ok else 'FAIL'}")
    print(f"py::cold share {100.0 - share:.1f} %")
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
