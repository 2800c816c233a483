"""NKI simulation speed: the examples next to their PyTorch reference, and the host cost of
one simulated instruction next to the equivalent torch op.

    .venv/bin/python benchmarks/bench_nki.py            # ~30 s
    .venv/bin/python benchmarks/bench_nki.py --quick    # smoke run

Two tables:

1. **examples**: host CPU time of one call of each example's ``nki_op`` on neuron tensors
   (the simulation) and of its PyTorch reference on the same neuron tensors (eager), the
   ratio, the kernel's instruction count, and the *modeled* Trainium time of both (the
   kernel's instruction schedule vs. the performance model's eager-op estimate of the
   reference) when the performance model is available.
2. **instructions**: host CPU time of one simulated 128 x 512 instruction (measured as the
   slope over a kernel issuing many of them) vs. the equivalent torch op on the same tile, both
   on one thread (``time.thread_time``: time the host spent on other processes is excluded).

Best of repeated runs of the CPU time of the calling thread, everything on one intra-op thread
(the simulator runs its instructions on one thread; time the host spends on other processes
is excluded).
Measurements, not tests: nothing here asserts.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples", "nki"))

import torch_neuronx.nki.isa as nisa  # noqa: E402
import torch_neuronx.nki.language as nl  # noqa: E402
from torch_neuronx import nki  # noqa: E402


def best_time(fn, reps: int, clock=time.perf_counter) -> float:
    """Fastest of ``reps`` runs after a warm-up: on a shared host the minimum is the
    measurement least disturbed by other processes (both sides are measured the same way)."""
    fn()  # warm-up
    times = []
    for _ in range(reps):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return min(times)


def modeled(fn):
    """Modeled Trainium seconds of ``fn`` (the performance model's events), or None."""
    try:
        import torch_neuronx.perf as perf
    except ImportError:
        return None
    with perf.measure() as m:
        fn()
    return sum(e.end - e.start for e in m.events) if m.events else None


def examples(reps: int):
    import flash_attention
    import matmul
    import rmsnorm
    import softmax
    import tensor_add

    d = "neuron"
    rows = []
    for dtype in (torch.float32, torch.bfloat16):
        rows += _example_rows(dtype, d, reps, tensor_add, matmul, softmax, rmsnorm, flash_attention)
    return rows


def _example_rows(dtype, d, reps, tensor_add, matmul, softmax, rmsnorm, flash_attention):
    a = torch.randn(512, 2048, dtype=dtype, device=d)
    b = torch.randn(512, 2048, dtype=dtype, device=d)
    x = torch.randn(512, 1024, dtype=dtype, device=d)
    w = torch.rand(1024, dtype=dtype, device=d) + 0.5
    ma = torch.randn(512, 512, dtype=dtype, device=d)
    mb = torch.randn(512, 1024, dtype=dtype, device=d)
    q, k, v = (torch.randn(1024, 64, dtype=dtype, device=d) for _ in range(3))
    gy = torch.randn(512, 1024, dtype=dtype, device=d)
    _, rstd = rmsnorm.rmsnorm_fwd(x, w, 1e-6)
    xg = x.detach().clone().requires_grad_()
    wg = w.detach().clone().requires_grad_()
    sdpa = torch.nn.functional.scaled_dot_product_attention
    cases = [
        (
            "tensor_add 512x2048",
            lambda: tensor_add.tensor_add(a, b),
            lambda: a + b,
            tensor_add.nki_tensor_add_kernel,
        ),
        (
            "matmul 512x512 @ 512x1024",
            lambda: matmul.matmul(ma, mb),
            lambda: ma @ mb,
            matmul.nki_matmul_tiled,
        ),
        (
            "softmax 512x1024",
            lambda: softmax.softmax(x),
            lambda: torch.softmax(x, -1),
            softmax.nki_softmax_kernel,
        ),
        (
            "rmsnorm fwd 512x1024",
            lambda: rmsnorm.rmsnorm_fwd(x, w, 1e-6),
            lambda: rmsnorm.reference(x, w),
            rmsnorm.nki_rmsnorm_fwd,
        ),
        (
            "rmsnorm bwd 512x1024",
            lambda: rmsnorm.rmsnorm_bwd(gy, x, w, rstd),
            lambda: torch.autograd.grad(rmsnorm.reference(xg, wg), (xg, wg), gy),
            rmsnorm.nki_rmsnorm_bwd,
        ),
        (
            "flash attn fwd causal S=1024 d=64",
            lambda: flash_attention.flash_attention(q, k, v, True),
            lambda: sdpa(q[None], k[None], v[None], is_causal=True),
            flash_attention.nki_flash_attention_fwd,
        ),
    ]
    rows = []
    for name, nki_fn, ref_fn, kernel in cases:
        t_nki = best_time(nki_fn, reps, time.thread_time)
        t_ref = best_time(ref_fn, reps, time.thread_time)
        r = kernel.last_report
        m_ref = modeled(ref_fn)
        rows.append(
            (
                name,
                str(dtype).replace("torch.", ""),
                t_nki * 1e3,
                t_ref * 1e3,
                t_nki / t_ref,
                r.total_instructions,
                r.modeled_seconds,
                m_ref,
            )
        )
    return rows


def _loop_kernel(op):
    @nki.jit
    def k(x, n):
        a = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=a, src=x)
        b = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=b, src=x)
        p = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
        s = nl.ndarray((128, 128), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=s, src=x[:, 0:128])
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        for _ in range(n):
            if op == "tensor_tensor add":
                nisa.tensor_tensor(dst=out, data1=a, data2=b, op=nl.add)
            elif op == "activation exp":
                nisa.activation(dst=out, op=nl.exp, data=a)
            elif op == "tensor_scalar mul":
                nisa.tensor_scalar(dst=out, data=a, op0=nl.multiply, operand0=2.0)
            elif op == "tensor_reduce max":
                nisa.tensor_reduce(dst=out[:, 0:1], op=nl.maximum, data=a, axis=1)
            elif op == "nc_matmul 128x128x512":
                nisa.nc_matmul(dst=p, stationary=s, moving=a)
            elif op == "dma_copy HBM->SBUF":
                nisa.dma_copy(dst=out, src=x)

    return k


def _torch_equivalent(op, a, b, s):
    out = torch.empty_like(a)
    if op == "tensor_tensor add":
        return lambda: torch.add(a, b, out=out)
    if op == "activation exp":
        return lambda: torch.exp(a, out=out)
    if op == "tensor_scalar mul":
        return lambda: torch.mul(a, 2.0, out=out)
    if op == "tensor_reduce max":
        return lambda: torch.amax(a, dim=1, keepdim=True)
    if op == "nc_matmul 128x128x512":
        return lambda: torch.mm(s.t().float(), a.float())
    return lambda: out.copy_(a)


def _instruction_times(op, x, xa, n, reps):
    """(seconds per simulated instruction, seconds per torch op), CPU time of this thread:
    both sides run on one thread, and time the host spends on other processes is not the
    simulator's cost."""
    k = _loop_kernel(op)
    t_many = best_time(lambda: k(x, n), reps, time.thread_time)
    t_none = best_time(lambda: k(x, 0), reps, time.thread_time)
    ref = _torch_equivalent(op, xa, xa.clone(), xa[:, 0:128].clone())
    t_ref = best_time(lambda: [ref() for _ in range(n)], reps, time.thread_time) / n
    return (t_many - t_none) / n, t_ref


def instructions(reps: int, n: int):
    rows = []
    ops = [
        "tensor_tensor add",
        "activation exp",
        "tensor_scalar mul",
        "tensor_reduce max",
        "nc_matmul 128x128x512",
        "dma_copy HBM->SBUF",
    ]
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.randn(128, 512, dtype=dtype, device="neuron")
        xa = x.cpu()
        for op in ops:
            per, t_ref = _instruction_times(op, x, xa, n, reps)
            rows.append((op, str(dtype).replace("torch.", ""), per * 1e6, t_ref * 1e6, per / t_ref))
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--quick", action="store_true", help="a smoke run (few repetitions)")
    args = p.parse_args(argv)
    # one intra-op thread for everything: the simulator runs its instructions on one thread,
    # and CPU time of one thread (time.thread_time) is stable on a shared host
    torch.set_num_threads(1)
    reps = 2 if args.quick else 7
    n = 20 if args.quick else 100
    print(
        f"# NKI simulation benchmark ({'quick' if args.quick else 'full'}; host: "
        f"{os.cpu_count()} CPUs, torch {torch.__version__})"
    )
    print("\n## examples: one call, host CPU time (simulated kernel vs. torch reference on neuron)")
    print(
        f"{'example':36s} {'dtype':9s} {'nki ms':>9s} {'torch ms':>9s} {'ratio':>7s} "
        f"{'instr':>6s} {'model nki us':>12s} {'model torch us':>14s}"
    )
    for name, dt, tn, tr, ratio, ins, mn, mr in examples(reps):
        mn_s = f"{mn * 1e6:12.1f}" if mn is not None else f"{'-':>12s}"
        mr_s = f"{mr * 1e6:14.1f}" if mr is not None else f"{'-':>14s}"
        print(f"{name:36s} {dt:9s} {tn:9.2f} {tr:9.3f} {ratio:7.1f} {ins:6d} {mn_s} {mr_s}")
    print("\n## instructions: host CPU time of one simulated 128x512 instruction vs. the torch op")
    print(f"{'instruction':24s} {'dtype':9s} {'sim us':>8s} {'torch us':>9s} {'ratio':>6s}")
    for op, dt, sim, ref, ratio in instructions(reps, n):
        print(f"{op:24s} {dt:9s} {sim:8.1f} {ref:9.1f} {ratio:6.1f}")


if __name__ == "__main__":
    main()
