"""A Hugging Face transformers Llama causal LM built from a config (random weights), one training
step: Llama-3-8B-sized for ``--fake``; ``--size tiny --eager`` for a real run on neuron.

Ordinary idioms on purpose: building on torch.device("neuron"), model.to("neuron"),
model.to(torch.bfloat16), an optimizer, torch.compile and .item()."""

import argparse

import torch
from transformers import LlamaConfig, LlamaForCausalLM

p = argparse.ArgumentParser()
p.add_argument("--size", choices=["8b", "tiny"], default="8b")
p.add_argument("--batch", type=int, default=1)
p.add_argument("--seq", type=int, default=2048)
p.add_argument("--eager", action="store_true", help="no torch.compile")
args = p.parse_args()
torch.manual_seed(0)
if args.size == "8b":
    cfg = LlamaConfig(
        vocab_size=128256,
        hidden_size=4096,
        intermediate_size=14336,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=8,
        max_position_embeddings=8192,
    )
else:
    cfg = LlamaConfig(
        vocab_size=256,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
    )
with torch.device("neuron"):
    model = LlamaForCausalLM(cfg)
model.to("neuron")
model.to(torch.bfloat16)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
step = model if args.eager else torch.compile(model, backend="neuron")
ids = torch.randint(0, cfg.vocab_size, (args.batch, args.seq), device="neuron")
out = step(input_ids=ids, labels=ids)
out.loss.backward()
opt.step()
print("loss", out.loss.item())  # MARK-item
