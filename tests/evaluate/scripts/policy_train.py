"""Float64 arithmetic (run in float32 on neuron) and an autocast region: the numerics section's
deviations by policy, and a loss that differs from the CPU's float64 in the last bits."""

import torch

torch.manual_seed(0)
w = torch.nn.Parameter(torch.randn(16, 8, dtype=torch.float64).to("neuron"))
opt = torch.optim.SGD([w], lr=0.1)
for _ in range(3):
    x = torch.randn(4, 16, dtype=torch.float64).to("neuron")
    y = torch.tanh(x @ w)  # MARK-float64
    with torch.autocast("neuron", dtype=torch.bfloat16):
        z = torch.mm(y.float(), torch.ones(8, 2, device="neuron"))  # MARK-autocast
    loss = y.pow(2).mean() + z.float().mean() * 0
    opt.zero_grad()
    loss.backward()
    opt.step()
