#!/usr/bin/env python
"""Train the TinyGPT on the neuron device and check every step against the CPU.

Runs the same seeded model on the same synthetic batches twice -- once on ``--device``
(default ``neuron``), once on the CPU -- with AdamW, and prints the losses side by side
with their relative difference. Exits with status 1 if any step differs by more than
``--rtol`` (default 1e-4) relative, or if a loss is not finite; 0 otherwise.

    python examples/train_gpt.py                 # 20 steps on neuron vs CPU
    python examples/train_gpt.py --steps 50 --d-model 64 --layers 4
    python examples/train_gpt.py --device cpu    # self-check of the script

A table is drawn with ``rich`` when it is installed, plain text otherwise (``--plain``
forces plain text).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

# Allow running from a source checkout without installing the package.
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

import torch  # noqa: E402  (autoloads torch_neuronx when it is installed)

from torch_neuronx.testing.models import (  # noqa: E402
    GPTConfig,
    build_tinygpt,
    make_batch,
    sync,
)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=20, help="training steps (default 20)")
    p.add_argument("--device", default="neuron", help="device to train on (default neuron)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--batch-size", type=int, default=4)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument(
        "--rtol",
        type=float,
        default=1e-4,
        help="max relative loss difference vs CPU before failing (default 1e-4)",
    )
    p.add_argument("--vocab", type=int, default=GPTConfig.vocab_size)
    p.add_argument("--seq-len", type=int, default=GPTConfig.seq_len)
    p.add_argument("--d-model", type=int, default=GPTConfig.d_model)
    p.add_argument("--heads", type=int, default=GPTConfig.n_heads)
    p.add_argument("--layers", type=int, default=GPTConfig.n_layers)
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch.set_num_threads (default 1: the model is tiny, and extra "
        "intra-op threads only slow it down on a busy machine; 0 = leave)",
    )
    p.add_argument("--plain", action="store_true", help="plain text output even if rich exists")
    return p.parse_args(argv)


class _Trainer:
    """One TinyGPT + AdamW on one device, advanced one step at a time."""

    def __init__(self, device, cfg, args):
        self.device = device
        self.cfg = cfg
        self.args = args
        self.model = build_tinygpt(args.seed, device, cfg).train()
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=args.lr)
        self.seconds = 0.0

    def step(self, i: int) -> float:
        t0 = time.perf_counter()
        idx, tgt = make_batch(
            self.args.seed * 1000 + i, self.args.batch_size, config=self.cfg, device=self.device
        )
        self.opt.zero_grad(set_to_none=True)
        _, loss = self.model(idx, tgt)
        loss.backward()
        self.opt.step()
        value = float(loss.detach().to("cpu"))  # also synchronises the device
        sync(self.device)
        self.seconds += time.perf_counter() - t0
        return value


def _rel(a: float, b: float) -> float:
    if not (math.isfinite(a) and math.isfinite(b)):
        return math.inf
    return abs(a - b) / max(abs(b), 1e-12)


class _PlainOut:
    def __init__(self, device):
        self.device = device

    def header(self, title):
        print(title)
        print(f"{'step':>5}  {self.device + ' loss':>14}  {'cpu loss':>14}  {'rel diff':>10}")

    def row(self, i, a, b, rel, ok):
        flag = "" if ok else "  <-- DIVERGED"
        print(f"{i:>5}  {a:>14.8f}  {b:>14.8f}  {rel:>10.2e}{flag}", flush=True)

    def footer(self, lines):
        for line in lines:
            print(line)


class _RichOut:
    def __init__(self, device):
        from rich.console import Console
        from rich.live import Live
        from rich.table import Table

        self.console = Console()
        self.table = Table()
        for name, just in (
            ("step", "right"),
            (f"{device} loss", "right"),
            ("cpu loss", "right"),
            ("rel diff", "right"),
        ):
            self.table.add_column(name, justify=just)
        self.live = Live(self.table, console=self.console, auto_refresh=False)

    def header(self, title):
        self.console.print(title, markup=False, highlight=False)
        self.live.start()

    def row(self, i, a, b, rel, ok):
        style = None if ok else "bold red"
        self.table.add_row(str(i), f"{a:.8f}", f"{b:.8f}", f"{rel:.2e}", style=style)
        self.live.refresh()

    def footer(self, lines):
        self.live.stop()
        if not self.console.is_terminal:
            self.console.line()
        for line in lines:
            self.console.print(line, markup=False, highlight=False)


def _make_out(device, plain):
    if not plain:
        try:
            return _RichOut(device)
        except ImportError:
            pass
    return _PlainOut(device)


def main(argv=None) -> int:
    args = parse_args(argv)
    cfg = GPTConfig(
        vocab_size=args.vocab,
        seq_len=args.seq_len,
        d_model=args.d_model,
        n_heads=args.heads,
        n_layers=args.layers,
    )
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        torch.empty(1, device=args.device)
    except Exception as e:  # noqa: BLE001
        print(
            f"error: device {args.device!r} is not usable: {type(e).__name__}: {e}", file=sys.stderr
        )
        return 2

    dev = _Trainer(args.device, cfg, args)
    ref = _Trainer("cpu", cfg, args)
    out = _make_out(args.device, args.plain)
    out.header(
        f"TinyGPT ({dev.model.num_parameters():,} params, {cfg.n_layers} layers, "
        f"d_model {cfg.d_model}), AdamW lr {args.lr}, batch {args.batch_size}x"
        f"{cfg.seq_len}: {args.device} vs cpu"
    )

    max_rel, first_bad = 0.0, None
    for i in range(args.steps):
        a = dev.step(i)
        b = ref.step(i)
        rel = _rel(a, b)
        ok = rel <= args.rtol
        if not ok and first_bad is None:
            first_bad = i
        max_rel = max(max_rel, rel)
        out.row(i, a, b, rel, ok)

    lines = [
        f"max relative loss difference: {max_rel:.3e} (tolerance {args.rtol:.0e})",
        f"time: {args.device} {dev.seconds:.2f}s, cpu {ref.seconds:.2f}s "
        f"(informational; see benchmarks/bench_eager.py for measurements)",
    ]
    if first_bad is not None:
        lines.append(f"FAIL: {args.device} diverged from cpu at step {first_bad}")
    else:
        lines.append(f"OK: {args.device} matches cpu for {args.steps} steps")
    out.footer(lines)
    return 1 if first_bad is not None else 0


if __name__ == "__main__":
    sys.exit(main())
