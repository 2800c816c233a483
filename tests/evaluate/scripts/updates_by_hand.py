"""No optimizer: the parameters are updated by hand through ``p.data`` (as pytorch/examples'
word_language_model does), each update after two accumulated backward() calls: 3 steps."""

import torch

torch.manual_seed(0)
model = torch.nn.Linear(8, 4).to("neuron")
for _ in range(3):
    for _ in range(2):  # gradient accumulation: one step
        x = torch.randn(16, 8).to("neuron")
        model(x).pow(2).mean().backward()
    for p in model.parameters():
        p.data.add_(p.grad, alpha=-0.1)  # MARK-update
        p.grad = None
