"""nanoGPT's bench.py, shortened: a GPT-2 124M benchmarked on random data, as its author runs it
on a GPU (torch.cuda calls, TF32 flags, f-string logging of the loss)."""

import sys
import time
from contextlib import nullcontext

import torch
from model import GPT, GPTConfig

batch_size = 12
block_size = 1024
bias = False
seed = 1337
device = "cuda"  # 'cpu', 'cuda', 'cuda:0', ... or 'neuron' (--device=neuron)
dtype = "bfloat16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "float16"
compile = True
for arg in sys.argv[1:]:  # nanoGPT's configurator.py: --key=value overrides
    key, val = arg[2:].split("=")
    globals()[key] = (
        type(globals()[key])(val) if not isinstance(globals()[key], bool) else val == "True"
    )

torch.manual_seed(seed)
torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
device_type = "cuda" if "cuda" in device else "cpu"
ptdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
ctx = (
    nullcontext()
    if device_type == "cpu"
    else torch.amp.autocast(device_type=device_type, dtype=ptdtype)
)

x = torch.randint(50304, (batch_size, block_size), device=device)
y = torch.randint(50304, (batch_size, block_size), device=device)
get_batch = lambda split: (x, y)  # noqa: E731

gptconf = GPTConfig(block_size=block_size, n_layer=12, n_head=12, n_embd=768, dropout=0, bias=bias)
model = GPT(gptconf)
model.to(device)
optimizer = model.configure_optimizers(
    weight_decay=1e-2, learning_rate=1e-4, betas=(0.9, 0.95), device_type=device_type
)
if compile:
    print("Compiling model...")
    model = torch.compile(model)

for stage, num_steps in enumerate([10, 20]):  # burnin, then benchmark
    torch.cuda.synchronize()  # MARK-sync
    t0 = time.time()
    X, Y = get_batch("train")
    for k in range(num_steps):
        with ctx:
            logits, loss = model(X, Y)
        X, Y = get_batch("train")
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        print(f"{k}/{num_steps} loss: {loss:.4f} raw {loss}")  # MARK-fstring
        lossf = loss.item()
        print(f"{k}/{num_steps} loss: {lossf:.4f}")
    torch.cuda.synchronize()
    t1 = time.time()
    dt = t1 - t0
    if stage == 1:
        print(f"time per iteration: {dt / num_steps * 1000:.4f}ms")
