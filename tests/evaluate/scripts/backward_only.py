"""backward() on the device and no update of any kind: nothing trains."""

import torch

torch.manual_seed(0)
model = torch.nn.Linear(8, 4).to("neuron")
for _ in range(3):
    model(torch.randn(16, 8).to("neuron")).pow(2).mean().backward()
    print(float(model.weight.grad.norm()))
