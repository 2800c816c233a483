#!/usr/bin/env python
"""Eager-mode overhead of the neuron device relative to the CPU (not a test).

One interleaved run: for every benchmark, repetitions alternate between the device
and the CPU (and the order flips every round), so machine noise -- other processes,
frequency changes -- hits both sides alike. Reported numbers are medians over rounds;
the headline is the ratio ``device / cpu`` (1.0 = as fast as plain PyTorch on the CPU,
2.0 = twice as slow).

Benchmarks:

- ``op_overhead``      ``a + a`` on 8 float32 elements, many times: per-op dispatch cost.
- ``mlp_sgd_step``     MLP 64->128->10, batch 32, forward + cross-entropy + backward +
                       SGD step.
- ``tinygpt_adamw_step`` TinyGPT (torch_neuronx.testing.models defaults), batch 4,
                       forward + backward + AdamW step.

Usage::

    python benchmarks/bench_eager.py                  # ~1 minute, prints a table
    python benchmarks/bench_eager.py --json out.json  # also write the results
    python benchmarks/bench_eager.py --budget 20       # quicker, noisier
    python benchmarks/bench_eager.py --device cpu     # harness self-check: ratios ~1.0

See benchmarks/README.md for how to read the output.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from torch_neuronx.testing.decoder_block import (  # noqa: E402
    build_decoder_block,
    make_hidden_batch,
)
from torch_neuronx.testing.models import (  # noqa: E402
    build_mlp,
    build_tinygpt,
    make_batch,
    make_mlp_batch,
    sync,
)

# --------------------------------------------------------------------------- workloads
#
# A workload factory takes a device and returns ``run(n)``, which performs ``n``
# iterations and waits for the device before returning. Setup (model, data, optimizer
# state) happens in the factory and is not timed.


def op_overhead(device) -> Callable[[int], None]:
    a = torch.ones(8, device=device)

    def run(n: int) -> None:
        for _ in range(n):
            a + a
        sync(device)

    return run


def mlp_sgd_step(device) -> Callable[[int], None]:
    model = build_mlp(0, device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = make_mlp_batch(0, batch_size=32, device=device)

    def run(n: int) -> None:
        for _ in range(n):
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(model(x), y).backward()
            opt.step()
        sync(device)

    return run


def tinygpt_adamw_step(device) -> Callable[[int], None]:
    model = build_tinygpt(0, device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    idx, tgt = make_batch(0, batch_size=4, device=device)

    def run(n: int) -> None:
        for _ in range(n):
            opt.zero_grad(set_to_none=True)
            _, loss = model(idx, tgt)
            loss.backward()
            opt.step()
        sync(device)

    return run


def decoder_block_step(device) -> Callable[[int], None]:
    # A Llama-style block in plain PyTorch: RMSNorm, rotary embedding, SDPA (grouped query
    # heads), SwiGLU; hidden 256, 8 heads, sequence 128, batch 2; AdamW.
    model = build_decoder_block(0, device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x, y = make_hidden_batch(0, device=device)

    def run(n: int) -> None:
        for _ in range(n):
            opt.zero_grad(set_to_none=True)
            F.mse_loss(model(x), y).backward()
            opt.step()
        sync(device)

    return run


BENCHMARKS = {
    "op_overhead": (op_overhead, "a + a, 8 floats", "op"),
    "mlp_sgd_step": (mlp_sgd_step, "MLP 64-128-10 SGD step, batch 32", "step"),
    "tinygpt_adamw_step": (tinygpt_adamw_step, "TinyGPT AdamW step, batch 4", "step"),
    "decoder_block_step": (
        decoder_block_step,
        "Llama-style decoder block AdamW step, batch 2x128",
        "step",
    ),
}


# --------------------------------------------------------------------------- harness


def _time(run: Callable[[int], None], n: int) -> float:
    t0 = time.perf_counter()
    run(n)
    return time.perf_counter() - t0


def _quantile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    if len(xs) == 1:
        return xs[0]
    pos = q * (len(xs) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def bench_one(name: str, device: str, rounds: int, seconds: float, log) -> dict:
    """Interleaved measurement of one workload on ``device`` and on the CPU.

    The iteration count per repetition is calibrated so that one round (a device
    repetition plus a CPU repetition) takes about ``seconds / rounds``."""
    factory = BENCHMARKS[name][0]
    runs = {"dev": factory(device), "cpu": factory("cpu")}

    # Warm up (first-call costs, allocator growth, optimizer state creation), then
    # calibrate: double n until one repetition on each side takes >= 20 ms.
    per_iter = {}
    for key, run in runs.items():
        run(3)
        n = 1
        while True:
            t = _time(run, n)
            if t >= 0.02 or n >= 1 << 20:
                break
            n *= 2
        per_iter[key] = t / n
    round_target = max(seconds / rounds, 1e-3)
    iters = max(1, int(round_target / (per_iter["dev"] + per_iter["cpu"])))

    samples = {"dev": [], "cpu": []}
    # If the machine got slower after calibration, stop early (keeping an even number
    # of rounds, at least 6, so both orders stay balanced) rather than overrun.
    deadline = time.perf_counter() + 1.5 * seconds
    for r in range(rounds):
        if r >= 6 and r % 2 == 0 and time.perf_counter() > deadline:
            log(f"  {name}: machine slower than calibrated; stopping after {r} rounds")
            break
        order = ("dev", "cpu") if r % 2 == 0 else ("cpu", "dev")
        for key in order:
            samples[key].append(_time(runs[key], iters) / iters)
    paired = [d / c for d, c in zip(samples["dev"], samples["cpu"])]
    med_dev = statistics.median(samples["dev"])
    med_cpu = statistics.median(samples["cpu"])
    res = {
        "description": BENCHMARKS[name][1],
        "unit": BENCHMARKS[name][2],
        "iters_per_rep": iters,
        "rounds": len(paired),
        "device_median_s": med_dev,
        "cpu_median_s": med_cpu,
        "ratio": med_dev / med_cpu,
        "paired_ratio_median": statistics.median(paired),
        "paired_ratio_p25": _quantile(paired, 0.25),
        "paired_ratio_p75": _quantile(paired, 0.75),
        "device_samples_s": samples["dev"],
        "cpu_samples_s": samples["cpu"],
    }
    log(
        f"  {name}: {device} {_fmt_t(med_dev)}/{res['unit']}, cpu {_fmt_t(med_cpu)}/"
        f"{res['unit']}, ratio {res['ratio']:.2f}"
    )
    return res


def _fmt_t(s: float) -> str:
    if s < 1e-3:
        return f"{s * 1e6:.2f} us"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def _git_rev() -> str:
    try:
        return subprocess.run(
            ["git", "-C", _ROOT, "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
        ).stdout.strip()
    except Exception:  # noqa: BLE001
        return ""


def print_table(device: str, results: dict, plain: bool) -> None:
    cols = [
        "benchmark",
        "what",
        f"{device} (median)",
        "cpu (median)",
        f"ratio {device}/cpu",
        "paired ratio p25-p75",
    ]
    rows = []
    for name, r in results.items():
        rows.append(
            [
                name,
                r["description"],
                f"{_fmt_t(r['device_median_s'])}/{r['unit']}",
                f"{_fmt_t(r['cpu_median_s'])}/{r['unit']}",
                f"{r['ratio']:.2f}x",
                f"{r['paired_ratio_p25']:.2f}-{r['paired_ratio_p75']:.2f}",
            ]
        )
    if not plain and sys.stdout.isatty():  # piped/redirected output gets plain text
        try:
            from rich.console import Console
            from rich.table import Table

            table = Table(title=f"eager overhead: {device} vs cpu")
            for i, c in enumerate(cols):
                table.add_column(c, justify="left" if i < 2 else "right")
            for row in rows:
                table.add_row(*row)
            Console().print(table)
            return
        except ImportError:
            pass
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)]
    print(f"eager overhead: {device} vs cpu")
    print("  ".join(c.ljust(w) for c, w in zip(cols, widths)))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print(
            "  ".join(
                v.ljust(w) if i < 2 else v.rjust(w) for i, (v, w) in enumerate(zip(row, widths))
            )
        )


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Eager overhead of a device vs the CPU.")
    p.add_argument("--device", default="neuron")
    p.add_argument(
        "--budget",
        type=float,
        default=60.0,
        help="approximate measured seconds in total, split across benchmarks "
        "(default 60; warm-up and calibration add a few seconds)",
    )
    p.add_argument(
        "--rounds",
        type=int,
        default=16,
        help="interleaved rounds per benchmark (default 16; even keeps both orders balanced)",
    )
    p.add_argument(
        "--only",
        action="append",
        choices=list(BENCHMARKS),
        help="run only this benchmark (repeatable)",
    )
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch.set_num_threads before measuring (default 1: tiny ops gain "
        "nothing from intra-op threads, and on a shared machine a "
        "descheduled OpenMP worker stalls every op; 0 = leave as is)",
    )
    p.add_argument("--json", metavar="PATH", help="also write results as JSON to PATH")
    p.add_argument(
        "--plain", action="store_true", help="plain-text table even with rich on a terminal"
    )
    args = p.parse_args(argv)

    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        torch.empty(1, device=args.device)
    except Exception as e:  # noqa: BLE001
        print(
            f"error: device {args.device!r} is not usable: {type(e).__name__}: {e}", file=sys.stderr
        )
        return 2

    names = args.only or list(BENCHMARKS)
    per_bench = args.budget / len(names)
    log = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    log(
        f"bench_eager: {args.device} vs cpu, {len(names)} benchmarks, {args.rounds} "
        f"interleaved rounds each, ~{args.budget:.0f}s measured"
    )
    t0 = time.perf_counter()
    results = {name: bench_one(name, args.device, args.rounds, per_bench, log) for name in names}
    wall = time.perf_counter() - t0

    print_table(args.device, results, args.plain)
    print(
        f"total wall time {wall:.1f}s; torch {torch.__version__}, "
        f"{torch.get_num_threads()} intra-op threads"
    )

    if args.json:
        meta = {
            "device": args.device,
            "torch": torch.__version__,
            "threads": torch.get_num_threads(),
            "cpu_count": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "git_rev": _git_rev(),
            "rounds": args.rounds,
            "budget_s": args.budget,
            "wall_s": wall,
            "time_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "results": results}, f, indent=2)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
