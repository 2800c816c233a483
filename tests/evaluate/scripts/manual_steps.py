"""No optimizer: a hand-written update, steps marked with torch_neuronx.evaluate.step(loss)."""

import torch

from torch_neuronx import evaluate

torch.manual_seed(0)
w = torch.randn(8, 4, device="neuron", requires_grad=True)
for _ in range(6):
    x = torch.randn(16, 8).to("neuron")
    loss = (x @ w).pow(2).mean()
    loss.backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
        w.grad = None
    evaluate.step(loss)  # MARK-step
