"""TinyGPT trained on neuron for the evaluate tests (eager, or --compile)."""

import argparse

import torch

from torch_neuronx.testing.models import GPTConfig, build_tinygpt, make_batch

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=4)
p.add_argument("--compile", action="store_true")
args = p.parse_args()
cfg = GPTConfig()
model = build_tinygpt(0, "neuron", cfg).train()
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
fwd = torch.compile(model, backend="neuron") if args.compile else model
for i in range(args.steps):
    idx, tgt = make_batch(i, 4, config=cfg, device="neuron")
    opt.zero_grad(set_to_none=True)
    _, loss = fwd(idx, tgt)
    loss.backward()
    opt.step()
