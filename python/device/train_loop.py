"""A small PyTorch training loop with a Metron region per step and GPU counters over each step.

    metron run --gpu-counter-mode region --gpu-metrics smsp__inst_executed.sum -- python3 train_loop.py
    metron run --gpu-counter-mode kernel --gpu-metrics smsp__inst_executed.sum -- python3 train_loop.py

In region mode each step is one CUPTI range; in kernel mode each kernel is counted and summed
per launching region. check.sh compares the two: the step's counters equal the sum of its
kernels' values.
"""

import os

import metron
import torch

STEPS = 8
torch.manual_seed(0)
device = torch.device("cuda")
model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(256, 512, device=device)
y = torch.randn(256, 10, device=device)
# Warm-up outside the counted steps: lazy module loading and cuBLAS set-up.
torch.nn.functional.mse_loss(model(x), y).backward()
opt.zero_grad(set_to_none=False)
torch.cuda.synchronize()

region_mode = os.environ.get("METRON_GPU_COUNTER_MODE") == "region"
metrics = [m for m in os.environ.get("METRON_GPU_METRICS", "").split(",") if m]
step = metron.region("step", gpu_metrics=metrics) if region_mode else metron.region("step")
for i in range(STEPS):
    with step:
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=False)
        torch.cuda.synchronize()
print("binding", metron.binding())
