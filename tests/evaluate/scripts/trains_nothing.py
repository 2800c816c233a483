"""The model runs on neuron, the optimizer holds CPU copies of its parameters: nothing trains."""

import copy

import torch

torch.manual_seed(0)
model_cpu = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(model_cpu.parameters(), lr=0.1)  # MARK-opt
model = copy.deepcopy(model_cpu).to("neuron")
x = torch.randn(8, 4, device="neuron")
for _ in range(3):
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
