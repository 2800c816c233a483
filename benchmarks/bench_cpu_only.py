#!/usr/bin/env python
"""What the autoloaded neuron backend costs a program that never uses the device (not a test).

PyTorch imports torch_neuronx at ``import torch`` (the ``torch.backends`` entry point), and
torch_neuronx replaces a few torch attributes and the CPU allocator
(torch_neuronx/runtime/patches.py lists them). None of that may slow down a CPU-only program.
This script compares the same CPU-only workloads in two interpreters running side by side, one
with the backend autoloaded and one with ``TORCH_DEVICE_BACKEND_AUTOLOAD=0``:

- ``import torch``: wall time of the import in a fresh interpreter (one sample per pair);
- ``a + a``: 8 float32 elements, per op (dispatch and the CPU allocator);
- ``MLP step``: 64->128->10, batch 32, forward + cross-entropy + backward + SGD step;
- ``torch.func.grad``: grad of a small function (a call through a wrapped transform);
- ``Normal(...)``: building a torch.distributions.Normal (a wrapped ``__init__``).

Interleaving: the parent starts a pair of children (order flipped every pair) and then asks
them, in turn, to time one short slice of each workload (order flipped every slice), so the
load of a shared machine hits both sides alike. Ratios are autoloaded / not loaded: the ratio
of the medians, and the interquartile range of the per-slice ratios. Every child also checks
that ``import torch`` imported neither Dynamo nor Inductor.

Usage::

    python benchmarks/bench_cpu_only.py              # 3 pairs x 8 slices, ~30 s on 2 cores
    python benchmarks/bench_cpu_only.py --pairs 5 --slices 12
    python benchmarks/bench_cpu_only.py --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import textwrap

# The child never imports torch_neuronx itself: with autoload off it must see plain torch.
CHILD = textwrap.dedent(
    """
    import json, sys, time
    t0 = time.perf_counter()
    import torch
    import_s = time.perf_counter() - t0
    assert "torch._dynamo" not in sys.modules, "import torch imported Dynamo"
    assert "torch._inductor" not in sys.modules, "import torch imported Inductor"
    torch.set_num_threads(1)
    torch.manual_seed(0)

    a = torch.randn(8)

    def add(n):
        for _ in range(n):
            a + a

    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))

    def mlp(n):
        for _ in range(n):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()

    g = torch.func.grad(lambda t: (t * t).sum())

    def grad(n):
        for _ in range(n):
            g(a)

    loc, scale = torch.zeros(8), torch.ones(8)

    def normal(n):
        for _ in range(n):
            torch.distributions.Normal(loc, scale, validate_args=False)

    WORK = {"a + a": (add, 4000), "MLP step": (mlp, 40), "torch.func.grad": (grad, 100),
            "Normal(...)": (normal, 1000)}
    for fn, n in WORK.values():
        fn(n)  # warm-up
    print(json.dumps({"loaded": "torch_neuronx" in sys.modules, "import_s": import_s}), flush=True)
    for line in sys.stdin:  # one workload name per line: time one slice of it
        fn, n = WORK[line.strip()]
        t = time.perf_counter()
        fn(n)
        print((time.perf_counter() - t) / n, flush=True)
    """
)
WORKLOADS = ("a + a", "MLP step", "torch.func.grad", "Normal(...)")


class _Child:
    def __init__(self, autoload: bool):
        env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="1" if autoload else "0")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", CHILD],
            env=env,
            text=True,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        self.autoload = autoload

    def ready(self) -> float:
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"child (autoload={self.autoload}) failed; see its stderr above")
        hello = json.loads(line)
        if hello["loaded"] != self.autoload:
            raise SystemExit(
                f"torch_neuronx loaded={hello['loaded']} with autoload={self.autoload}"
            )
        return hello["import_s"]

    def time(self, workload: str) -> float:
        self.proc.stdin.write(workload + "\n")
        self.proc.stdin.flush()
        return float(self.proc.stdout.readline())

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=3, help="pairs of fresh interpreters")
    ap.add_argument("--slices", type=int, default=8, help="timed slices per workload and pair")
    ap.add_argument("--json", help="also write the samples and ratios here")
    args = ap.parse_args()

    samples = {name: {True: [], False: []} for name in ("import torch", *WORKLOADS)}
    for p in range(args.pairs):
        order = (True, False) if p % 2 == 0 else (False, True)
        children = {}
        for autoload in order:  # one at a time: the imports must not overlap
            children[autoload] = _Child(autoload)
            samples["import torch"][autoload].append(children[autoload].ready())
        for s in range(args.slices):
            for name in WORKLOADS:
                for autoload in order if s % 2 == 0 else order[::-1]:
                    samples[name][autoload].append(children[autoload].time(name))
        for child in children.values():
            child.close()
        print(f"pair {p + 1}/{args.pairs} done", file=sys.stderr)

    results = {}
    print(
        f"{'benchmark':<16} {'autoloaded':>12} {'not loaded':>12} {'ratio':>6}  per-sample p25-p75"
    )
    for name, s in samples.items():
        on, off = s[True], s[False]
        ratios = sorted(x / y for x, y in zip(on, off))
        q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3
        ratio = statistics.median(on) / statistics.median(off)
        label, scale = ("ms", 1e3) if name == "import torch" else ("us", 1e6)
        results[name] = {
            "autoloaded_s": on,
            "not_loaded_s": off,
            "ratio": ratio,
            "paired_p25": q[0],
            "paired_p75": q[2],
        }
        print(
            f"{name:<16} {statistics.median(on) * scale:>9.2f} {label} "
            f"{statistics.median(off) * scale:>9.2f} {label} {ratio:>6.2f}  {q[0]:.2f}-{q[2]:.2f}"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"pairs": args.pairs, "slices": args.slices, "results": results}, f, indent=2)


if __name__ == "__main__":
    main()
