"""A small PyTorch loop whose GPU sleep is a parameter: each step (an NVTX range `step`) runs a
few small operators, `torch.cuda._sleep(CYCLES)` (the kernel `spin_kernel`) and `.item()`
(a copy and a stream sync). A run with CYCLES halved is the measured answer to "what if the
sleep were 50 % faster", predicted from a run with CYCLES.

    python3 torch_whatif.py CYCLES [STEPS]
Prints "TORCHWHATIF step_ms=<median host wall time of a step>".
"""
import statistics
import sys
import time

import torch


def main():
    cycles = int(sys.argv[1])
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 60
    torch.manual_seed(0)
    w = torch.randn(256, 256, device="cuda")
    x = torch.randn(64, 256, device="cuda")
    times = []
    for i in range(steps + 5):
        t0 = time.perf_counter()
        torch.cuda.nvtx.range_push("step")
        h = torch.relu(x @ w)
        h = torch.relu(h @ w)
        torch.cuda._sleep(cycles)
        total = (h * 0.5).sum().item()
        torch.cuda.nvtx.range_pop()
        if i >= 5:
            times.append((time.perf_counter() - t0) * 1e3)
    assert total == total
    print("TORCHWHATIF step_ms=%.4f" % statistics.median(times))


if __name__ == "__main__":
    main()
