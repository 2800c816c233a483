"""AutoModelForCausalLM.from_config(LlamaConfig(Llama-3-8B shapes)), one bf16 training step as a
GPU user writes it (cuda device, an f-string of the loss); --fake projects it at full size.
``--layers N``: Llama-3-8B's layer, N of them (32: the 8B model)."""

import argparse

import torch
from transformers import AutoModelForCausalLM, LlamaConfig

p = argparse.ArgumentParser()
p.add_argument("--layers", type=int, default=32)
layers = p.parse_args().layers
cfg = LlamaConfig(
    vocab_size=128256,
    hidden_size=4096,
    intermediate_size=14336,
    num_hidden_layers=layers,
    num_attention_heads=32,
    num_key_value_heads=8,
    max_position_embeddings=8192,
)
device = "cuda" if torch.cuda.is_available() else "cpu"
model = AutoModelForCausalLM.from_config(cfg, torch_dtype=torch.bfloat16).to(device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
ids = torch.randint(0, cfg.vocab_size, (1, 2048), device=device)
out = model(input_ids=ids, labels=ids)
out.loss.backward()
opt.step()
print(f"loss {out.loss:.4f}")
