"""A launch-bound PyTorch training step (an 8-layer MLP of width 256, AdamW, batch
64: a few hundred small kernels per step), the median of STEPS timed steps after 30 untimed.

    python3 torch_step.py plain [STEPS]      # no profiler of its own (run it bare or under metron run)
    python3 torch_step.py kineto [STEPS]     # inside torch.profiler with CUDA activities only (Kineto)
Prints "STEP mode=... median_ms=... kernels_per_step=..." (kernels counted with torch.profiler
once, before timing, only in kineto mode).
"""
import statistics
import sys
import time

import torch


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "plain"
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    torch.manual_seed(0)
    layers = []
    for _ in range(8):
        layers += [torch.nn.Linear(256, 256), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers, torch.nn.Linear(256, 10)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)
    x = torch.randn(64, 256, device="cuda")
    y = torch.randint(0, 10, (64,), device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

    def timed(n):
        out = []
        for _ in range(n):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            step()
            torch.cuda.synchronize()
            out.append((time.perf_counter() - t0) * 1e3)
        return out

    for _ in range(30):
        step()
    if mode == "kineto":
        acts = [torch.profiler.ProfilerActivity.CUDA]
        with torch.profiler.profile(activities=acts):
            times = timed(steps)
    else:
        times = timed(steps)
    print(f"STEP mode={mode} median_ms={statistics.median(times):.3f} steps={steps}")


if __name__ == "__main__":
    main()
