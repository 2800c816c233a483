"""Seven more kernels for tests/nki/test_public_kernels.py, each written here after a named
public AWS kernel (the same algorithm, API generation and idioms; not a copy of its code),
with its PyTorch reference:

- average pooling and the per-partition 2-D transpose of the nki-samples tutorials
  (https://github.com/aws-neuron/nki-samples, src/nki_samples/tutorials/average_pool2d and
  transpose2d; pre-0.2 language: ``nl.mgrid`` index expressions, reductions over axes 2 and 4);
- the SPMD tensor addition of the same tutorials (``spmd_tensor_addition``; a 2-D launch grid);
- layer normalisation (tutorials/layernorm; ``bn_stats``/``bn_aggr``, 0.2+ ISA calls);
- rotary position embedding (tutorials/rotary);
- the blocked matrix multiplication of AWS's "Matrix multiplication" tutorial (SBUF blocking,
  K accumulated in PSUM, bfloat16 in, float32 accumulation);
- the two-core exchange of AWS's ``nki.isa.sendrecv`` page (an LNC=2 all-gather).
"""

import torch

import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
import torch_neuronx.nki.legacy as lnki
import torch_neuronx.nki.legacy.language as lnl
from torch_neuronx import nki

D = "neuron"


# ---- pre-0.2 language (neuronxcc.nki)
@lnki.jit
def avg_pool2d(x, pool):
    C, H, W = x.shape
    Ho, Wo = H // pool, W // pool
    out = lnl.ndarray((C, Ho, Wo), dtype=x.dtype, buffer=lnl.shared_hbm)
    i0, i1, i2, i3, i4 = lnl.mgrid[0:C, 0:Ho, 0:pool, 0:Wo, 0:pool]
    t = lnl.load(x[i0, pool * i1 + i2, pool * i3 + i4])  # (C, Ho, pool, Wo, pool)
    s = lnl.sum(t, axis=[2, 4])
    lnl.store(out, value=lnl.multiply(s, 1.0 / (pool * pool)))
    return out


@lnki.jit
def transpose2d(x, f1, f2):
    P = x.shape[0]
    out = lnl.ndarray((P, f2 * f1), dtype=x.dtype, buffer=lnl.shared_hbm)
    ip, i1, i2 = lnl.mgrid[0:P, 0:f1, 0:f2]
    t = lnl.load(x[ip, i1 * f2 + i2])  # (P, f1, f2)
    lnl.store(out[ip, i2 * f1 + i1], value=t)  # element (i1, i2) to column i2 * f1 + i1
    return out


@lnki.jit
def spmd_add(a, b):
    out = lnl.ndarray(a.shape, dtype=a.dtype, buffer=lnl.shared_hbm)
    i, j = lnl.program_id(0), lnl.program_id(1)
    r0, c0 = i * 128, j * 512
    x = lnl.load(a[r0 : r0 + 128, c0 : c0 + 512])
    y = lnl.load(b[r0 : r0 + 128, c0 : c0 + 512])
    lnl.store(out[r0 : r0 + 128, c0 : c0 + 512], value=lnl.add(x, y))
    return out


# ---- the 0.2+ API
@nki.jit
def layernorm(x, gamma, beta, eps):
    N, Dm = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    g = nl.ndarray((128, Dm), dtype=gamma.dtype, buffer=nl.sbuf)
    b = nl.ndarray((128, Dm), dtype=beta.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=g, src=gamma.reshape((1, Dm)).broadcast(0, 128))
    nisa.dma_copy(dst=b, src=beta.reshape((1, Dm)).broadcast(0, 128))
    e = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=e, value=eps)
    for i in nl.affine_range(N // 128):
        t = nl.ndarray((128, Dm), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[i * 128 : (i + 1) * 128, :])
        stats = nl.ndarray((128, 6), dtype=nl.float32, buffer=nl.sbuf)
        nisa.bn_stats(dst=stats, data=t)
        mv = nl.ndarray((128, 2), dtype=nl.float32, buffer=nl.sbuf)
        nisa.bn_aggr(dst=mv, data=stats)
        rstd = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=rstd, op=nl.rsqrt, data=mv[:, 1:2], bias=e)
        y = nl.ndarray((128, Dm), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(
            dst=y, data=t, op0=nl.subtract, operand0=mv[:, 0:1], op1=nl.multiply, operand1=rstd
        )
        nisa.tensor_tensor(dst=y, data1=y, data2=g, op=nl.multiply)
        r = nl.ndarray((128, Dm), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=r, data1=y, data2=b, op=nl.add)
        nisa.dma_copy(dst=out[i * 128 : (i + 1) * 128, :], src=r)
    return out


@nki.jit
def rotary(x, cos, sin):
    N, Dm = x.shape
    h = Dm // 2
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(N // 128):
        rows = slice(i * 128, (i + 1) * 128)
        t = nl.ndarray((128, Dm), dtype=x.dtype, buffer=nl.sbuf)
        c = nl.ndarray((128, h), dtype=cos.dtype, buffer=nl.sbuf)
        s = nl.ndarray((128, h), dtype=sin.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[rows, :])
        nisa.dma_copy(dst=c, src=cos[rows, :])
        nisa.dma_copy(dst=s, src=sin[rows, :])
        x1, x2 = t[:, 0:h], t[:, h:Dm]
        a = nl.ndarray((128, h), dtype=nl.float32, buffer=nl.sbuf)
        bb = nl.ndarray((128, h), dtype=nl.float32, buffer=nl.sbuf)
        r = nl.ndarray((128, Dm), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=a, data1=x1, data2=c, op=nl.multiply)
        nisa.tensor_tensor(dst=bb, data1=x2, data2=s, op=nl.multiply)
        nisa.tensor_tensor(dst=r[:, 0:h], data1=a, data2=bb, op=nl.subtract)  # x1 cos - x2 sin
        nisa.tensor_tensor(dst=a, data1=x2, data2=c, op=nl.multiply)
        nisa.tensor_tensor(dst=bb, data1=x1, data2=s, op=nl.multiply)
        nisa.tensor_tensor(dst=r[:, h:Dm], data1=a, data2=bb, op=nl.add)  # x2 cos + x1 sin
        nisa.dma_copy(dst=out[rows, :], src=r)
    return out


@nki.jit
def blocked_matmul(lhsT, rhs):
    K, M = lhsT.shape
    N = rhs.shape[1]
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // 128):
        # the stationary column block stays in SBUF for every N tile (SBUF blocking)
        a = nl.ndarray((128, K // 128, 128), dtype=lhsT.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(K // 128):
            nisa.dma_copy(
                dst=a[:, k, :], src=lhsT[k * 128 : (k + 1) * 128, m * 128 : (m + 1) * 128]
            )
        for n in nl.affine_range(N // 512):
            p = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // 128):
                bt = nl.ndarray((128, 512), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=bt, src=rhs[k * 128 : (k + 1) * 128, n * 512 : (n + 1) * 512])
                nisa.nc_matmul(dst=p, stationary=a[:, k, :], moving=bt, accumulate=k > 0)
            r = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_copy(dst=r, src=p)
            nisa.dma_copy(dst=out[m * 128 : (m + 1) * 128, n * 512 : (n + 1) * 512], src=r)
    return out


@nki.jit
def lnc_all_gather(x):
    """Each core scales its half of ``x`` by (rank + 1), sends it to the other core and
    stores both halves: out = [x0 * 1; x1 * 2] written by both cores."""
    P, F = x.shape[0] // 2, x.shape[1]
    out = nl.ndarray((2, 2 * P, F), dtype=x.dtype, buffer=nl.shared_hbm)
    rank = nl.program_id(0)
    peer = (rank + 1) % 2
    mine = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=mine, src=x[rank * P : (rank + 1) * P, :])
    nisa.tensor_scalar(dst=mine, data=mine, op0=nl.multiply, operand0=float(rank + 1))
    theirs = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.sendrecv(src=mine, dst=theirs, send_to_rank=peer, recv_from_rank=peer, pipe_id=0)
    nisa.dma_copy(dst=out[rank, rank * P : (rank + 1) * P, :], src=mine)
    nisa.dma_copy(dst=out[rank, peer * P : (peer + 1) * P, :], src=theirs)
    return out


def collection():
    """(name, run() -> (actual, expected, tolerance)) for the seven kernels."""
    t5 = dict(rtol=1e-5, atol=1e-5)
    img = torch.randn(64, 16, 24, device=D)
    tr = torch.randn(128, 6 * 10, device=D)
    a, b = torch.randn(256, 1024, device=D), torch.randn(256, 1024, device=D)
    x = torch.randn(256, 384, device=D)
    gamma, beta = torch.rand(384, device=D) + 0.5, torch.randn(384, device=D)
    q = torch.randn(256, 64, device=D)
    ang = torch.rand(256, 32, device=D) * 6.28
    lhsT = torch.randn(256, 256, device=D).to(torch.bfloat16)
    rhs = torch.randn(256, 1024, device=D).to(torch.bfloat16)
    g2 = torch.randn(256, 32, device=D)

    def rope_ref(q, c, s):
        q1, q2 = q[:, :32], q[:, 32:]
        return torch.cat([q1 * c - q2 * s, q2 * c + q1 * s], dim=1)

    def gathered(x):
        y = torch.cat([x[:128], 2 * x[128:]])
        return torch.stack([y, y])

    return [
        (
            "nki-samples avg_pool2d (legacy)",
            lambda: (avg_pool2d(img, 4), torch.nn.functional.avg_pool2d(img[None], 4)[0], t5),
        ),
        (
            "nki-samples transpose2d (legacy)",
            lambda: (
                transpose2d(tr, 6, 10),
                tr.reshape(128, 6, 10).transpose(1, 2).reshape(128, 60),
                dict(rtol=0, atol=0),
            ),
        ),
        (
            "nki-samples spmd tensor add (legacy, grid 2x2)",
            lambda: (spmd_add[2, 2](a, b), a + b, t5),
        ),
        (
            "nki-samples layernorm",
            lambda: (
                layernorm(x, gamma, beta, 1e-5),
                torch.nn.functional.layer_norm(x, (384,), gamma, beta, 1e-5),
                dict(rtol=1e-4, atol=1e-4),
            ),
        ),
        (
            "nki-samples rotary",
            lambda: (rotary(q, ang.cos(), ang.sin()), rope_ref(q, ang.cos(), ang.sin()), t5),
        ),
        (
            "matmul tutorial, blocked bf16",
            lambda: (
                blocked_matmul(lhsT, rhs),
                lhsT.float().t() @ rhs.float(),
                dict(rtol=1e-4, atol=1e-3),
            ),
        ),
        ("sendrecv all-gather (LNC=2)", lambda: (lnc_all_gather[2](g2), gathered(g2), t5)),
    ]
