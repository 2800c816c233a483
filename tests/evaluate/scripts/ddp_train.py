"""2-rank DDP on neuron (torchrun)."""

import torch
import torch.distributed as dist

dist.init_process_group("neuron")
rank = dist.get_rank()
torch.neuron.set_device(rank)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(16, 16).to("neuron"))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    x = torch.randn(8, 16, device="neuron")
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
dist.destroy_process_group()
