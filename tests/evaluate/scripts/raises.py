"""One step on neuron, then an error."""

import torch

w = torch.nn.Parameter(torch.ones(3, device="neuron"))
opt = torch.optim.SGD([w], lr=0.1)
(w * 2).sum().backward()
opt.step()
raise RuntimeError("boom from the user script")  # MARK-raise
