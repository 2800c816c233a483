"""Two steps, then Ctrl-C (a real SIGINT to this process)."""

import os
import signal

import torch

w = torch.nn.Parameter(torch.ones(3, device="neuron"))
opt = torch.optim.SGD([w], lr=0.1)
for i in range(5):
    (w * 2).sum().backward()
    opt.step()
    if i == 1:
        os.kill(os.getpid(), signal.SIGINT)
