"""Never touches the neuron device."""

import torch

w = torch.nn.Parameter(torch.ones(3))
opt = torch.optim.SGD([w], lr=0.1)
for _ in range(2):
    (w * 2).sum().backward()
    opt.step()
