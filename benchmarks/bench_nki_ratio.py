"""NKI simulation speed against the same computation as plain fp32 torch ops (issue 24's goal:
within 3x).

    python benchmarks/bench_nki_ratio.py            # ~1 min
    python benchmarks/bench_nki_ratio.py --quick

For each kernel, "plain torch" is the kernel's own tile program written as torch ops on CPU
float32 tensors: the same loops, the same tiles, one torch op per instruction (a DMA is a
``copy_`` into a preallocated tile, ``tensor_tensor`` a ``torch.add(..., out=)``, the scan
the same doubling the simulator uses, ...), on one thread. The ratio is what simulating costs
over doing the kernel's arithmetic: operand checks, views, the cost schedule, allocation
bookkeeping. Host CPU time of the calling thread (``time.thread_time``), best of 21 runs
taken alternately with the plain version, so time the host spends on other processes is
excluded and load changes hit both sides alike. Measurements, not tests.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples", "nki"))

import embedding  # noqa: E402
import mamba_tutorial as mk  # noqa: E402
import matmul  # noqa: E402
import softmax  # noqa: E402
import tensor_add  # noqa: E402

from torch_neuronx.nki.isa.scans import affine_scan  # noqa: E402


def best(fn, reps):
    fn()
    out = []
    for _ in range(reps):
        t0 = time.thread_time()
        fn()
        out.append(time.thread_time() - t0)
    return min(out)


def best_pair(fa, fb, reps):
    """Best times of ``fa`` and ``fb`` measured alternately (load changes hit both alike)."""
    fa()
    fb()
    ta, tb = [], []
    for _ in range(reps):
        t0 = time.thread_time()
        fa()
        ta.append(time.thread_time() - t0)
        t0 = time.thread_time()
        fb()
        tb.append(time.thread_time() - t0)
    return min(ta), min(tb)


# ---- the kernels' tile programs as plain torch ops (CPU, fp32)
def plain_add(a, b):
    M, N = a.shape
    c = torch.empty_like(a)
    for m in range(0, M, 128):
        for n in range(0, N, 512):
            at = torch.empty(128, 512)
            bt = torch.empty(128, 512)
            at.copy_(a[m : m + 128, n : n + 512])
            bt.copy_(b[m : m + 128, n : n + 512])
            ct = torch.empty(128, 512)
            torch.add(at, bt, out=ct)
            c[m : m + 128, n : n + 512].copy_(ct)
    return c


def plain_softmax(x):
    R, C = x.shape
    out = torch.empty_like(x)
    for t in range(0, R, 128):
        xt = torch.empty(128, C)
        xt.copy_(x[t : t + 128])
        nm = torch.empty(128, 1)
        torch.amax(xt, 1, keepdim=True, out=nm)
        nm.neg_()
        e = torch.empty(128, C)
        torch.exp(torch.add(xt, nm, out=e), out=e)
        tot = e.sum(1, keepdim=True)
        inv = torch.reciprocal(tot)
        y = torch.empty(128, C)
        torch.mul(e, inv, out=y)
        out[t : t + 128].copy_(y)
    return out


def plain_matmul(lhsT, rhs):
    K, M = lhsT.shape
    N = rhs.shape[1]
    res = torch.empty(M, N)
    for m in range(0, M, 128):
        for n in range(0, N, 512):
            ps = torch.empty(128, 512)
            for k in range(0, K, 128):
                lt = torch.empty(128, 128)
                rt = torch.empty(128, 512)
                lt.copy_(lhsT[k : k + 128, m : m + 128])
                rt.copy_(rhs[k : k + 128, n : n + 512])
                if k == 0:
                    torch.mm(lt.t(), rt, out=ps)
                else:
                    ps.add_(torch.mm(lt.t(), rt))
            sb = torch.empty(128, 512)
            sb.copy_(ps)
            res[m : m + 128, n : n + 512].copy_(sb)
    return res


def plain_mamba_v2(delta, u, A, B, C):
    _, channels, seq = delta.shape
    states = A.shape[1]
    out = torch.empty_like(delta)
    ones = torch.ones(1, 128)
    for ct in range(0, channels, 128):
        acc = torch.zeros(128, seq)
        dt = torch.empty(128, seq)
        ut = torch.empty(128, seq)
        dt.copy_(delta[0, ct : ct + 128])
        ut.copy_(u[0, ct : ct + 128])
        At = torch.empty(128, states)
        At.copy_(A[ct : ct + 128])
        for s in range(states):
            Br = torch.empty(1, seq)
            Cr = torch.empty(1, seq)
            Br.copy_(B[0, s : s + 1])
            Cr.copy_(C[0, s : s + 1])
            da = torch.exp(dt * At[:, s : s + 1])
            du = dt * ut
            dbu = du * torch.mm(ones.t(), Br)
            h = affine_scan(da, dbu, torch.zeros(128, 1))
            hc = h * torch.mm(ones.t(), Cr)
            acc.add_(hc)
        out[0, ct : ct + 128].copy_(acc)
    return out


def plain_embedding(table, ids):
    """The embedding kernel's tiles: ids to a tile, clear, gather rows (index_select), store."""
    (N,) = ids.shape
    D = table.shape[1]
    out = torch.empty(N, D)
    for t in range(0, N, 128):
        idx = torch.empty(128, 1, dtype=torch.int64)
        idx.copy_(ids[t : t + 128].reshape(128, 1))
        emb = torch.empty(128, D)
        emb.fill_(0.0)
        torch.index_select(table, 0, idx.reshape(-1), out=emb)
        out[t : t + 128].copy_(emb)
    return out


def cases():
    d = "neuron"
    a, b = torch.randn(512, 2048), torch.randn(512, 2048)
    x = torch.randn(512, 1024)
    lhsT, rhs = torch.randn(512, 512), torch.randn(512, 1024)
    mam = [t.cpu() for t in mk.inputs(channels=256, seq=512, device="cpu")]
    table, ids = torch.randn(8192, 1024), torch.randint(0, 8192, (1024,), dtype=torch.int32)
    return [
        (
            "tensor_add 512x2048",
            (a.to(d), b.to(d)),
            tensor_add.nki_tensor_add_kernel,
            lambda: plain_add(a, b),
        ),
        (
            "softmax 512x1024",
            (x.to(d),),
            softmax.nki_softmax_kernel,
            lambda: plain_softmax(x),
        ),
        (
            "matmul 512x512 @ 512x1024",
            (lhsT.to(d), rhs.to(d)),
            matmul.nki_matmul_tiled,
            lambda: plain_matmul(lhsT, rhs),
        ),
        (
            "mamba_v2 256 ch x 512 seq, 16 states",
            tuple(t.to(d) for t in mam),
            mk.mamba_v2,
            lambda: plain_mamba_v2(*mam),
        ),
        (
            "embedding 8192x1024, 1024 ids (indirect DMA)",
            (table.to(d), ids.to(d)),
            embedding.nki_embedding_kernel,
            lambda: plain_embedding(table, ids.long()),
        ),
    ]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args(argv)
    reps = 3 if a.quick else 21
    torch.manual_seed(0)
    torch.set_num_threads(1)  # the simulator runs its instructions on one thread
    print(f"{'kernel':<46}{'instr':>7}{'sim ms':>9}{'plain ms':>10}{'ratio':>8}")
    for name, args, kernel, plain in cases():
        sim, ref = best_pair(lambda: kernel(*args), plain, reps)  # noqa: B023
        n = kernel.last_report.total_instructions
        print(f"{name:<46}{n:>7}{sim * 1e3:>9.2f}{ref * 1e3:>10.2f}{sim / ref:>8.2f}")


if __name__ == "__main__":
    main()
