"""A small PyTorch loop whose GPU sleep is a parameter: each step (an NVTX range) runs a few
small operators, `torch.cuda._sleep(cycles)` (the kernel `spin_kernel`) and `.item()` (a copy
and a stream sync). Steps alternate: `step` sleeps CYCLES, `step_half` CYCLES / 2 — the
measured answer to "what if the sleep were 50 % faster", predicted from the `step`s of the
same process.

    python3 torch_whatif.py CYCLES [STEPS]
Prints "TORCHWHATIF step_ms=... step_half_ms=..." (median host wall times).
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
    times = {"step": [], "step_half": []}
    for i in range(2 * steps + 6):
        name = "step" if i % 2 == 0 else "step_half"
        t0 = time.perf_counter()
        torch.cuda.nvtx.range_push(name)
        h = torch.relu(x @ w)
        h = torch.relu(h @ w)
        torch.cuda._sleep(cycles if name == "step" else cycles // 2)
        total = (h * 0.5).sum().item()
        torch.cuda.nvtx.range_pop()
        if i >= 6:
            times[name].append((time.perf_counter() - t0) * 1e3)
    assert total == total
    print("TORCHWHATIF step_ms=%.4f step_half_ms=%.4f" % (statistics.median(times["step"]), statistics.median(times["step_half"])))


if __name__ == "__main__":
    main()
