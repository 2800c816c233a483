"""nanoGPT train.py's loop on the emulated device, eager vs torch.compile(backend="neuron").

Issue 26 item 4: the loop as nanoGPT's train.py runs it on one device, at reduced size --
gradient accumulation (several micro-steps per optimizer step), ``torch.autocast`` with
bfloat16 on the device (a GradScaler only for float16), ``estimate_loss()`` under
``model.eval()`` + ``no_grad`` every ``eval_interval`` steps, the learning rate set on the
param groups every step, ``clip_grad_norm_``, AdamW. An eager and a compiled model (same
initial weights) step alternately in one process, the order swapped every step (ABBA), so
load changes hit both; dropout is on (0.2, nanoGPT's shakespeare_char config). Reported: the
median per-step wall time of each after the first (compile) step, the median of the per-step
compiled/eager ratios (wall and process CPU time), the load average before and after, and
Dynamo's counters (graphs, recompiles, graph breaks).

    python benchmarks/bench_nanogpt_loop.py [--steps 16] [--threads N] [--dropout 0.2]

On a loaded 2-core machine two intra-op threads make every step one to two orders of
magnitude slower (each OpenMP region waits for a descheduled thread), eager and compiled
alike, and per-step times then swing several-fold: compare the ratio, or use --threads 1.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time
from collections import Counter

import torch

from torch_neuronx.testing.models import GPTConfig, TinyGPT, make_batch


def get_lr(it, *, lr=6e-4, warmup=2, decay=100, min_lr=6e-5):
    if it < warmup:
        return lr * (it + 1) / (warmup + 1)
    ratio = min(1.0, (it - warmup) / (decay - warmup))
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (lr - min_lr)


class Loop:
    def __init__(self, cfg, args, device, compiled):
        self.cfg, self.args, self.device = cfg, args, device
        self.model = TinyGPT(cfg, seed=0)
        self.opt = torch.optim.AdamW(
            self.model.parameters(), lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1
        )
        self.model.to(device)  # after the optimizer, as nanoGPT does
        self.run = torch.compile(self.model, backend="neuron") if compiled else self.model
        self.ctx = torch.autocast(device.type, dtype=args.dtype)
        self.scaler = torch.amp.GradScaler(device.type, enabled=args.dtype == torch.float16)
        self.batch_seed = 0

    def batch(self):
        self.batch_seed += 1
        return make_batch(
            self.batch_seed, batch_size=self.args.batch, config=self.cfg, device=self.device
        )

    @torch.no_grad()
    def estimate_loss(self):
        self.model.eval()
        losses = []
        for _ in range(self.args.eval_iters):
            x, y = self.batch()
            with self.ctx:
                _, loss = self.run(x, y)
            losses.append(loss.item())
        self.model.train()
        return sum(losses) / len(losses)

    def step(self, it):
        if it % self.args.eval_interval == 0:
            self.estimate_loss()
        for group in self.opt.param_groups:
            group["lr"] = get_lr(it)
        x, y = self.batch()
        for _ in range(self.args.accum):
            with self.ctx:
                _, loss = self.run(x, y)
                loss = loss / self.args.accum
            x, y = self.batch()  # prefetch, as nanoGPT does
            self.scaler.scale(loss).backward()
        if self.args.grad_clip:
            self.scaler.unscale_(self.opt)
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.args.grad_clip)
        self.scaler.step(self.opt)
        self.scaler.update()
        self.opt.zero_grad(set_to_none=True)
        return loss.item() * self.args.accum


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=16)
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--vocab", type=int, default=512)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--accum", type=int, default=4)
    p.add_argument("--eval-interval", type=int, default=4)
    p.add_argument("--eval-iters", type=int, default=2)
    p.add_argument("--grad-clip", type=float, default=1.0)
    p.add_argument("--dropout", type=float, default=0.2)
    p.add_argument("--threads", type=int, default=0, help="intra-op threads (0: torch's)")
    p.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    args = p.parse_args(argv)
    args.dtype = getattr(torch, args.dtype)
    if args.threads:
        torch.set_num_threads(args.threads)
    cfg = GPTConfig(
        vocab_size=args.vocab,
        seq_len=args.seq,
        d_model=args.d_model,
        n_heads=args.heads,
        n_layers=args.layers,
        dropout=args.dropout,
    )
    device = torch.device("neuron")
    load_before = os.getloadavg()
    loops = {"eager": Loop(cfg, args, device, False), "compiled": Loop(cfg, args, device, True)}
    n_params = sum(q.numel() for q in loops["eager"].model.parameters())
    wall = {k: [] for k in loops}
    cpu = {k: [] for k in loops}
    losses = {k: [] for k in loops}
    for it in range(args.steps):
        order = list(loops) if it % 2 == 0 else list(reversed(loops))  # ABBA
        for name in order:
            t0, c0 = time.perf_counter(), time.process_time()
            losses[name].append(loops[name].step(it))
            wall[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
    counters = {k: dict(v) for k, v in torch._dynamo.utils.counters.items() if v}
    med = {k: statistics.median(v[1:]) for k, v in wall.items()}
    load_after = os.getloadavg()
    print(
        f"nanoGPT loop: {n_params / 1e6:.2f}M params, batch {args.batch}x{args.seq}, "
        f"accum {args.accum}, dropout {args.dropout}, autocast {args.dtype}, eval every "
        f"{args.eval_interval} ({args.eval_iters} iters), {args.steps} steps; "
        f"threads {torch.get_num_threads()} of {os.cpu_count()} cores; load average "
        f"{load_before[0]:.1f} before, {load_after[0]:.1f} after"
    )
    for k in loops:
        print(
            f"  {k:9s} first step {wall[k][0]:7.2f} s   median after {med[k]:6.3f} s "
            f"(CPU {statistics.median(cpu[k][1:]):6.3f} s)   "
            f"steps {[round(t, 3) for t in wall[k]]}"
        )
    ratios = [c / e for c, e in zip(wall["compiled"][1:], wall["eager"][1:])]
    cpu_ratios = [c / e for c, e in zip(cpu["compiled"][1:], cpu["eager"][1:])]
    print(
        f"  compiled/eager per step after the first: wall median {statistics.median(ratios):.2f} "
        f"(min {min(ratios):.2f}, max {max(ratios):.2f}); CPU time median "
        f"{statistics.median(cpu_ratios):.2f}"
    )
    print(f"  losses eager {losses['eager'][-1]:.4f} compiled {losses['compiled'][-1]:.4f}")
    stats = Counter()
    for k in ("stats", "recompiles", "graph_break", "frames"):
        for kk, v in counters.get(k, {}).items():
            stats[f"{k}.{kk}"] = v
    print(f"  dynamo counters: {dict(stats)}")
    return med, ratios, counters


if __name__ == "__main__":
    main()
