"""A small PyTorch training loop (MLP, AdamW, 20 steps) for the kernel-count check.

    python3 torch_train.py plain              # run it (under `metron run`)
    python3 torch_train.py nvtx               # the same inside torch.autograd.profiler.emit_nvtx()
    python3 torch_train.py profile OUT.json   # the same under torch.profiler: kernel name -> count
"""
import collections
import json
import sys
import time

import torch


def work():
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(512, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 1024), torch.nn.GELU(),
        torch.nn.Linear(1024, 10)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(256, 512, device="cuda")
    y = torch.randint(0, 10, (256,), device="cuda")
    for _ in range(20):
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    torch.cuda.synchronize()
    return float(loss)


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "plain"
    torch.cuda.init()
    if mode == "profile":
        acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        with torch.profiler.profile(activities=acts) as p:
            loss = work()
        p.export_chrome_trace(sys.argv[2] + ".trace.json")
        with open(sys.argv[2] + ".trace.json") as f:
            events = json.load(f)["traceEvents"]
        counts = collections.Counter(e["name"] for e in events if e.get("cat") == "kernel")
        with open(sys.argv[2], "w") as f:
            json.dump(counts, f, indent=1, sort_keys=True)
    elif mode == "nvtx":
        with torch.autograd.profiler.emit_nvtx():
            loss = work()
    else:
        loss = work()
    # When the program's work ended (CLOCK_MONOTONIC): the suite times the end of a run from it.
    print("TORCH_TRAIN", mode, "loss", loss, "end_monotonic", time.monotonic(), flush=True)


if __name__ == "__main__":
    main()
