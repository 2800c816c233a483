"""A training loop with a CPU-fallback op, a host sync inside the loop, a recompilation and an
unsupported feature (a torch.func transform over a neuron tensor)."""

import torch

torch.manual_seed(0)
model = torch.nn.Linear(8, 8).to("neuron")
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def head(x):
    return (x * 2).sum(dim=-1)


head_c = torch.compile(head, backend="neuron", dynamic=False)
g = torch.func.grad(lambda t: (t * t).sum())(torch.ones(3, device="neuron"))  # MARK-unsupported
for step in range(4):
    x = torch.randn(4, 8, device="neuron")
    y = model(x)
    q, _ = torch.linalg.qr(y)  # MARK-fallback
    n = 6 if step < 2 else 10
    z = head_c(torch.randn(3, n, device="neuron"))  # MARK-recompile
    loss = q.sum() + y.pow(2).mean() + z.sum() * 0
    opt.zero_grad()
    loss.backward()
    opt.step()
    if loss.item() > 1e9:  # MARK-sync
        break
