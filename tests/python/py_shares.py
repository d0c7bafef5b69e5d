"""Pure-Python 3:1 workload for the device check of Python frames.

`hot` and `cold` run the same loop body; `hot` is asked for three times the iterations, so
three quarters of the CPU time is spent in it. Run under `metron sample -- python3
py_shares.py` (no flag: `metron sample` sets PYTHONPERFSUPPORT=1 for Python >= 3.12), then
`check_py_shares.py RUN_FOLDER` prints the shares of `py::hot` and `py::cold`.
"""

import sys
import time


def hot(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


def cold(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


def main(seconds=3.0):
    start = time.process_time()
    rounds = 0
    while time.process_time() - start < seconds:
        hot(30_000)
        cold(10_000)
        rounds += 1
    print(f"py_shares: {rounds} rounds in {seconds} s of CPU time")


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 3.0)
