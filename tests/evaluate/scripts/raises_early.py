"""Raises before its first step (a crashed --fake trace)."""

import torch

model = torch.nn.Linear(4, 2).to("neuron")
y = model(torch.randn(8, 4, device="neuron"))
raise ValueError("broken data pipeline")  # MARK-raise
