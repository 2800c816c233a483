#!/usr/bin/env python
"""torch.compile(backend="neuron"): compile time and steady-state training step (not a test).

From one run:

1. **First-call compile time, cold and warm cache.** A child process builds TinyGPT on the
   neuron device, compiles it with ``backend="neuron"`` against an empty
   ``TORCH_NEURONX_NEFF_CACHE_DIR`` and times the first training step (forward + backward,
   compilation included); a second child repeats it against the now-populated cache. Each
   child also reports the backend's own split (AOTAutograd / lowering / code generation)
   from ``get_dynamo_metrics()``. Times exclude interpreter start-up and ``import torch``.
2. **Steady-state training step**, interleaved rounds (the order flips every round, so
   machine noise hits every variant alike), median per-step time of:
   - ``neuron-compiled``:  TinyGPT on neuron tensors, ``torch.compile(backend="neuron")``
   - ``cpu-inductor``:     the same model on CPU tensors, ``torch.compile(backend="inductor")``
   - ``neuron-eager``:     TinyGPT on neuron tensors, no compilation
   A step is zero_grad + forward + loss + backward + ``AdamW.step()`` (the optimizer runs
   eagerly: mixed mode), ending with a device synchronisation.

Usage::

    python benchmarks/bench_compile.py                 # prints a table (a few minutes)
    python benchmarks/bench_compile.py --json out.json
    python benchmarks/bench_compile.py --skip-compile-time   # steady state only
    python benchmarks/bench_compile.py --skip-steady-state   # compile times only
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import json, os, sys, time
sys.path.insert(0, os.environ["BENCH_ROOT"])
import torch
import torch_neuronx
from torch_neuronx.compile import get_dynamo_metrics
from torch_neuronx.testing.models import build_tinygpt, make_batch, sync
torch.set_num_threads(int(os.environ.get("BENCH_THREADS", "1")))
import torch._inductor.compile_fx  # imported up front: not part of the compile time
model = build_tinygpt(0, "neuron")
idx, tgt = make_batch(0, 4, device="neuron")
compiled = torch.compile(model, backend="neuron")
t0 = time.perf_counter()
_, loss = compiled(idx, tgt)
loss.backward()
sync("neuron")
first = time.perf_counter() - t0
t0 = time.perf_counter()
_, loss = compiled(idx, tgt)
loss.backward()
sync("neuron")
second = time.perf_counter() - t0
recs = get_dynamo_metrics()
print("RESULT" + json.dumps({
    "first_step_s": first,
    "second_step_s": second,
    "graphs": len(recs),
    "cache": [r["cache"] for r in recs],
    "aot_autograd_s": sum(r["aot_autograd_s"] for r in recs),
    "lowering_s": sum(r["lowering_s"] for r in recs),
    "codegen_s": sum(r["codegen_s"] for r in recs),
    "aot_cache": [r.get("aot_cache") for r in recs],
    "total_backend_s": sum(r["total_s"] for r in recs),
}))
"""


def _child(cache_dir: str, threads: int) -> dict:
    env = dict(os.environ)
    env.update(
        TORCH_NEURONX_NEFF_CACHE_DIR=cache_dir,
        BENCH_ROOT=_ROOT,
        BENCH_THREADS=str(threads),
    )
    env.pop("TORCH_NEURONX_NEFF_DISABLE_CACHE", None)
    proc = subprocess.run(
        [sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=3600
    )
    if proc.returncode != 0:
        raise RuntimeError(f"compile-time child failed:\n{proc.stderr[-4000:]}")
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")][-1]
    return json.loads(line[len("RESULT") :])


def compile_times(threads: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench_neff_cache_") as d:
        print("compile time: cold process ...", file=sys.stderr, flush=True)
        cold = _child(d, threads)
        print("compile time: warm process ...", file=sys.stderr, flush=True)
        warm = _child(d, threads)
    return {
        "cold": cold,
        "warm": warm,
        "warm_over_cold_first_step": warm["first_step_s"] / cold["first_step_s"],
        "warm_over_cold_codegen": warm["codegen_s"] / max(cold["codegen_s"], 1e-9),
    }


def steady_state(rounds: int, iters: int, threads: int) -> dict:
    sys.path.insert(0, _ROOT)
    import torch

    import torch_neuronx  # noqa: F401
    from torch_neuronx.testing.models import build_tinygpt, make_batch, sync

    if threads > 0:
        torch.set_num_threads(threads)

    def workload(device, backend):
        model = build_tinygpt(0, device)
        runner = torch.compile(model, backend=backend) if backend else model
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
        idx, tgt = make_batch(0, 4, device=device)

        def run(n):
            for _ in range(n):
                opt.zero_grad(set_to_none=True)
                _, loss = runner(idx, tgt)
                loss.backward()
                opt.step()
            sync(device)

        return run

    variants = {
        "neuron-compiled": workload("neuron", "neuron"),
        "cpu-inductor": workload("cpu", "inductor"),
        "neuron-eager": workload("neuron", None),
    }
    for name, run in variants.items():  # compile + warm-up
        print(f"steady state: warming up {name} ...", file=sys.stderr, flush=True)
        run(3)
    samples = {name: [] for name in variants}
    names = list(variants)
    for r in range(rounds):
        order = names if r % 2 == 0 else names[::-1]
        for name in order:
            t0 = time.perf_counter()
            variants[name](iters)
            samples[name].append((time.perf_counter() - t0) / iters)
    med = {n: statistics.median(s) for n, s in samples.items()}
    paired = [a / b for a, b in zip(samples["neuron-compiled"], samples["cpu-inductor"])]
    paired_eager = [a / b for a, b in zip(samples["neuron-compiled"], samples["neuron-eager"])]
    q = lambda xs: statistics.quantiles(xs, n=4) if len(xs) >= 2 else [xs[0]] * 3  # noqa: E731
    return {
        "median_step_s": med,
        "neuron_compiled_over_cpu_inductor": med["neuron-compiled"] / med["cpu-inductor"],
        "paired_ratio_vs_inductor_p25_p50_p75": q(paired),
        "neuron_compiled_over_neuron_eager": med["neuron-compiled"] / med["neuron-eager"],
        "paired_ratio_vs_eager_p25_p50_p75": q(paired_eager),
        "samples_s": samples,
        "rounds": rounds,
        "iters_per_round": iters,
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--iters", type=int, default=10, help="steps per variant per round")
    ap.add_argument("--threads", type=int, default=1, help="intra-op threads (0: default)")
    ap.add_argument("--skip-compile-time", action="store_true")
    ap.add_argument("--skip-steady-state", action="store_true", help="compile times only")
    ap.add_argument("--json", help="write results to this path")
    args = ap.parse_args()

    t_start = time.time()
    out = {
        "meta": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "threads": args.threads,
            "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
    }
    if not args.skip_compile_time:
        out["compile_time"] = compile_times(args.threads)
    if not args.skip_steady_state:
        out["steady_state"] = steady_state(args.rounds, args.iters, args.threads)
    out["meta"]["wall_s"] = time.time() - t_start

    print("\ntorch.compile(backend='neuron') -- TinyGPT (default config), batch 4")
    if "compile_time" in out:
        ct = out["compile_time"]
        print("\nfirst training step incl. compilation (s)      cold     warm   warm/cold")
        print(
            f"  wall time of the first step             {ct['cold']['first_step_s']:8.2f} "
            f"{ct['warm']['first_step_s']:8.2f}   {ct['warm_over_cold_first_step']:6.1%}"
        )
        for k in ("aot_autograd_s", "lowering_s", "codegen_s"):
            c, w = ct["cold"][k], ct["warm"][k]
            print(f"    backend {k:<28} {c:8.2f} {w:8.2f}   {w / max(c, 1e-9):6.1%}")
        print(f"  cache status: cold {ct['cold']['cache']}  warm {ct['warm']['cache']}")
        print(f"  AOT cache:    cold {ct['cold']['aot_cache']}  warm {ct['warm']['aot_cache']}")
    ss = out.get("steady_state")
    if ss is None:
        if args.json:
            with open(args.json, "w") as f:
                json.dump(out, f, indent=2)
        return
    print("\nsteady-state training step (median ms)")
    for name, v in ss["median_step_s"].items():
        print(f"  {name:<18} {v * 1e3:9.3f}")
    p = ss["paired_ratio_vs_inductor_p25_p50_p75"]
    print(
        f"  neuron-compiled / cpu-inductor : {ss['neuron_compiled_over_cpu_inductor']:.3f}"
        f"  (paired p25-p75 {p[0]:.3f}-{p[2]:.3f})"
    )
    p = ss["paired_ratio_vs_eager_p25_p50_p75"]
    print(
        f"  neuron-compiled / neuron-eager : {ss['neuron_compiled_over_neuron_eager']:.3f}"
        f"  (paired p25-p75 {p[0]:.3f}-{p[2]:.3f})"
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
