"""A neuron compile failure the script catches (timm's benchmark does), then eager steps."""

import torch

torch.manual_seed(0)
model = torch.nn.Linear(4, 2).to("neuron")
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(8, 4, device="neuron")
try:
    fast = torch.compile(model, backend="neuron", options={"dynamic": True})
    fast(x)  # MARK-compile
except Exception as e:  # noqa: BLE001 - the point of the script
    print("compile failed, running eagerly:", type(e).__name__)
for _ in range(3):
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
