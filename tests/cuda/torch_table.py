"""The launch-bound PyTorch step's table for the device plans: reads the "CONFIG STEP ..." lines
(one per process, `torch_step.py`'s line with the configuration's name in front) and prints,
per configuration, the median of the per-process medians and its ratio to the "none" rounds.
Usage: python3 torch_table.py TORCH_TXT
"""
import collections
import statistics
import sys

rounds = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    kv = dict(x.split("=") for x in f[2:])
    rounds[f[0]].append(float(kv["median_ms"]))
base = statistics.median(rounds["none"])
width = max(len(c) for c in rounds)
for config, ms in rounds.items():
    m = statistics.median(ms)
    print(f"TORCH {config:{width}s} median {m:.3f} ms  x{m / base:.3f}  rounds {len(ms)}  all {' '.join(f'{x:.2f}' for x in ms)}")
