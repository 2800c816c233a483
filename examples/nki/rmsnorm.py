"""RMSNorm forward and backward as NKI kernels, trainable through ``nki_op`` +
``register_autograd``.

    python examples/nki/rmsnorm.py

``y = x * rstd * w`` with ``rstd = 1 / sqrt(mean(x^2) + eps)`` per row of ``x[R, H]``.

- The forward kernel is written with the high-level language (``nl.load`` / ``nl.square`` /
  ``nl.sum`` ...) and legacy index expressions with masks for the last, partial row tile
  (``mask=(i * 128 + ix < R)``), as in the NKI RMSNorm tutorial. It also writes ``rstd``
  for the backward pass.
- The backward kernel is written with ISA instructions: ``dx = rstd * (g - xhat *
  mean(g * xhat))`` with ``g = dy * w`` and ``xhat = x * rstd``; ``dw`` is the column sum of
  ``dy * xhat`` over all rows, accumulated across row tiles in one PSUM bank by matmuls with a
  ones vector (a partition-dim reduction on the Tensor Engine).
"""

from __future__ import annotations

import torch

import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
from torch_neuronx import nki

P = 128


@nki.jit
def nki_rmsnorm_fwd(x, w, eps):
    R, H = x.shape
    out = nl.ndarray((R, H), dtype=x.dtype, buffer=nl.shared_hbm)
    rstd_out = nl.ndarray((R, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    ix = nl.arange(P)[:, None]
    iy = nl.arange(H)[None, :]
    i1 = nl.arange(1)[None, :]
    # the weight row, broadcast once to all partitions (a cross-partition copy)
    w_row = nl.load(w.reshape((1, H)))
    w_tile = nl.broadcast_to(w_row, (P, H))
    for i in nl.affine_range((R + P - 1) // P):
        rows = i * P + ix
        x_tile = nl.load(x[rows, iy], mask=(rows < R))
        x32 = nl.copy(x_tile, dtype=nl.float32)
        sq_sum = nl.sum(nl.square(x32), axis=[1])
        mean = nl.multiply(sq_sum, 1.0 / H)
        rstd = nl.rsqrt(nl.add(mean, eps))
        y = nl.multiply(nl.multiply(x32, rstd), w_tile, dtype=x.dtype)
        nl.store(out[rows, iy], value=y, mask=(rows < R))
        nl.store(rstd_out[rows, i1], value=rstd, mask=(rows < R))
    return out, rstd_out


@nki.jit
def nki_rmsnorm_bwd(dy, x, w, rstd):
    R, H = x.shape
    dx = nl.ndarray((R, H), dtype=x.dtype, buffer=nl.shared_hbm)
    dw = nl.ndarray((1, H), dtype=nl.float32, buffer=nl.shared_hbm)
    BANK = nl.tile_size.psum_bank_fmax  # 512 fp32 columns per PSUM bank
    w_row = nl.ndarray((1, H), dtype=w.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=w_row, src=w.reshape((1, H)))
    w_tile = nl.broadcast_to(w_row, (P, H), dtype=nl.float32)
    ones = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=ones, value=1.0)
    n_chunks = (H + BANK - 1) // BANK
    dw_psum = [
        nl.ndarray((1, min(BANK, H - c * BANK)), dtype=nl.float32, buffer=nl.psum)
        for c in range(n_chunks)
    ]
    for i in nl.sequential_range((R + P - 1) // P):
        rows = min(P, R - i * P)
        r = slice(i * P, i * P + rows)
        x_t = nl.ndarray((rows, H), dtype=x.dtype, buffer=nl.sbuf)
        dy_t = nl.ndarray((rows, H), dtype=dy.dtype, buffer=nl.sbuf)
        rs = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=x_t, src=x[r, :])
        nisa.dma_copy(dst=dy_t, src=dy[r, :])
        nisa.dma_copy(dst=rs, src=rstd[r, :])
        xhat = nl.ndarray((rows, H), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=xhat, data=x_t, op0=nl.multiply, operand0=rs)
        g = nl.ndarray((rows, H), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=g, data1=dy_t, data2=w_tile[0:rows, :], op=nl.multiply)
        gx = nl.ndarray((rows, H), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=gx, data1=g, data2=xhat, op=nl.multiply)
        c = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=c, op=nl.add, data=gx, axis=1)
        nisa.tensor_scalar(dst=c, data=c, op0=nl.multiply, operand0=1.0 / H)
        t = nl.ndarray((rows, H), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=t, data=xhat, op0=nl.multiply, operand0=c)
        nisa.tensor_tensor(dst=t, data1=g, data2=t, op=nl.subtract)
        dx_t = nl.ndarray((rows, H), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=dx_t, data=t, op0=nl.multiply, operand0=rs)
        nisa.dma_copy(dst=dx[r, :], src=dx_t)
        # dw += column sums of dy * xhat: ones[rows, 1].T @ (dy * xhat)[rows, H] on TensorE
        z = nl.ndarray((rows, H), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=z, data1=dy_t, data2=xhat, op=nl.multiply)
        for ch in range(n_chunks):
            cols = slice(ch * BANK, min(H, (ch + 1) * BANK))
            nisa.nc_matmul(dst=dw_psum[ch], stationary=ones[0:rows, :], moving=z[:, cols])
    for ch in range(n_chunks):
        cols = slice(ch * BANK, min(H, (ch + 1) * BANK))
        dw_sb = nl.ndarray(dw_psum[ch].shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=dw_sb, src=dw_psum[ch])
        nisa.dma_copy(dst=dw[:, cols], src=dw_sb)
    return dx, dw


@nki.nki_op("nki_examples::rmsnorm_fwd", mutates_args={})
def rmsnorm_fwd(x: torch.Tensor, w: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    return nki_rmsnorm_fwd(x, w, eps)


@nki.nki_op("nki_examples::rmsnorm_bwd", mutates_args={})
def rmsnorm_bwd(
    dy: torch.Tensor, x: torch.Tensor, w: torch.Tensor, rstd: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    dx, dw = nki_rmsnorm_bwd(dy, x, w, rstd)
    return dx, dw.reshape(w.shape).to(w.dtype)


def _setup(ctx, inputs, output):
    x, w, _ = inputs
    ctx.save_for_backward(x, w, output[1])


def _backward(ctx, dy, _drstd):
    x, w, rstd = ctx.saved_tensors
    dx, dw = rmsnorm_bwd(dy.contiguous(), x, w, rstd)
    return dx, dw, None


rmsnorm_fwd.register_autograd(_backward, setup_context=_setup)


def rms_norm(x: torch.Tensor, w: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """RMSNorm over the last dim (any leading dims), differentiable."""
    shape = x.shape
    y, _ = rmsnorm_fwd(x.reshape(-1, shape[-1]), w, eps)
    return y.reshape(shape)


class NkiRMSNorm(torch.nn.Module):
    """``torch.nn.RMSNorm``'s behaviour (learnable weight) on the NKI kernels."""

    def __init__(self, dim: int, eps: float = 1e-6, device=None, dtype=None):
        super().__init__()
        self.eps = eps
        self.weight = torch.nn.Parameter(torch.ones(dim, device=device, dtype=dtype))

    def forward(self, x):
        return rms_norm(x, self.weight, self.eps)


def reference(x: torch.Tensor, w: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    x32 = x.float()
    y = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps) * w.float()
    return y.to(x.dtype)


def main():
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.randn(300, 256, dtype=dtype, device="neuron", requires_grad=True)
        w = (torch.rand(256, dtype=dtype, device="neuron") + 0.5).requires_grad_()
        y = rms_norm(x, w)
        y_ref = reference(x, w)
        tol = dict(rtol=2e-2, atol=2e-2) if dtype == torch.bfloat16 else dict(rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(y.cpu().float(), y_ref.cpu().float(), **tol)
        gy = torch.randn_like(y)
        gx, gw = torch.autograd.grad(y, (x, w), gy)
        gx_ref, gw_ref = torch.autograd.grad(y_ref, (x, w), gy)
        torch.testing.assert_close(gx.cpu().float(), gx_ref.cpu().float(), **tol)
        torch.testing.assert_close(
            gw.cpu().float(), gw_ref.cpu().float(), rtol=tol["rtol"] * 5, atol=tol["atol"] * 5
        )
        print(f"rmsnorm {dtype}: forward and backward match torch; {nki_rmsnorm_bwd.last_report}")


if __name__ == "__main__":
    main()
