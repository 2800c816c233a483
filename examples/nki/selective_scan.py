"""Mamba's selective scan (the S6 recurrence) in the style of AWS's Mamba NKI tutorial.

    python examples/nki/selective_scan.py

For a batch ``b``, channel ``c`` and state ``s`` the hidden state follows
``h[t] = exp(delta[t] * A[c, s]) * h[t-1] + delta[t] * u[t] * B[s, t]`` and the output is
``y[t] = sum_s C[s, t] * h[t]``. Channels go to partitions (128 per tile), time to the free
axis. Per state: ``exp(delta * A[:, s])`` is one Scalar Engine ``activation`` with a
per-partition scale, ``delta * u * B`` two Vector Engine multiplies (``B``'s row broadcast to
the channel partitions by DMA), the recurrence one ``nisa.tensor_tensor_scan`` (``op0=multiply``,
``op1=add``) and the contraction with ``C`` a multiply and an add into the output tile.
"""

from __future__ import annotations

import torch

import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
from torch_neuronx import nki

TILE_C = 128


@nki.jit
def nki_selective_scan(delta, u, A, B, C):
    """delta, u: (batch, channels, seq); A: (channels, states) float32; B, C: (batch, states,
    seq). Returns y: (batch, channels, seq) in u's dtype."""
    batch, channels, seq = u.shape
    states = A.shape[1]
    y = nl.ndarray(u.shape, dtype=u.dtype, buffer=nl.shared_hbm)
    for b in nl.affine_range(batch):
        for ct in nl.affine_range((channels + TILE_C - 1) // TILE_C):
            P = min(TILE_C, channels - ct * TILE_C)
            ch = slice(ct * TILE_C, ct * TILE_C + P)
            delta_t = nl.ndarray((P, seq), dtype=nl.float32, buffer=nl.sbuf)
            u_t = nl.ndarray((P, seq), dtype=nl.float32, buffer=nl.sbuf)
            A_t = nl.ndarray((P, states), dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(dst=delta_t, src=delta[b, ch, :])
            nisa.dma_copy(dst=u_t, src=u[b, ch, :])
            nisa.dma_copy(dst=A_t, src=A[ch, :])
            delta_u = nl.ndarray((P, seq), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_tensor(dst=delta_u, data1=delta_t, data2=u_t, op=nl.multiply)
            y_acc = nl.ndarray((P, seq), dtype=nl.float32, buffer=nl.sbuf)
            nisa.memset(dst=y_acc, value=0.0)
            for s in nl.affine_range(states):
                # deltaA = exp(delta * A[:, s]): the state's A column is the activation's scale
                delta_a = nl.ndarray((P, seq), dtype=nl.float32, buffer=nl.sbuf)
                nisa.activation(dst=delta_a, op=nl.exp, data=delta_t, scale=A_t[:, s : s + 1])
                # B[b, s, :] and C[b, s, :] broadcast to the channel partitions by the DMA
                B_t = nl.ndarray((P, seq), dtype=nl.float32, buffer=nl.sbuf)
                C_t = nl.ndarray((P, seq), dtype=nl.float32, buffer=nl.sbuf)
                nisa.dma_copy(dst=B_t, src=B[b, s : s + 1, :].broadcast(0, P))
                nisa.dma_copy(dst=C_t, src=C[b, s : s + 1, :].broadcast(0, P))
                delta_bu = nl.ndarray((P, seq), dtype=nl.float32, buffer=nl.sbuf)
                nisa.tensor_tensor(dst=delta_bu, data1=delta_u, data2=B_t, op=nl.multiply)
                # h[t] = deltaA[t] * h[t-1] + deltaBu[t], h[-1] = 0
                h = nl.ndarray((P, seq), dtype=nl.float32, buffer=nl.sbuf)
                nisa.tensor_tensor_scan(
                    dst=h,
                    data0=delta_a,
                    data1=delta_bu,
                    initial=0.0,
                    op0=nl.multiply,
                    op1=nl.add,
                )
                # y += C[s] * h
                nisa.tensor_tensor(dst=h, data1=h, data2=C_t, op=nl.multiply)
                nisa.tensor_tensor(dst=y_acc, data1=y_acc, data2=h, op=nl.add)
            y_t = nl.ndarray((P, seq), dtype=u.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=y_t, src=y_acc)
            nisa.dma_copy(dst=y[b, ch, :], src=y_t)
    return y


@nki.nki_op("nki_examples::selective_scan", mutates_args={})
def selective_scan(
    delta: torch.Tensor, u: torch.Tensor, A: torch.Tensor, B: torch.Tensor, C: torch.Tensor
) -> torch.Tensor:
    return nki_selective_scan(delta, u, A, B, C)


def reference(delta, u, A, B, C):
    """The recurrence step by step in float32 (Mamba's reference selective scan)."""
    delta, u, A, B, C = (t.float().cpu() for t in (delta, u, A, B, C))
    batch, channels, seq = u.shape
    h = torch.zeros(batch, channels, A.shape[1])
    ys = []
    for t in range(seq):
        da = torch.exp(delta[:, :, t, None] * A)  # (batch, channels, states)
        dbu = (delta[:, :, t] * u[:, :, t])[:, :, None] * B[:, None, :, t]
        h = da * h + dbu
        ys.append((h * C[:, None, :, t]).sum(-1))
    return torch.stack(ys, dim=-1)


def inputs(batch=2, channels=160, states=4, seq=96, dtype=torch.float32, device="neuron"):
    g = torch.Generator().manual_seed(0)
    delta = torch.nn.functional.softplus(torch.randn(batch, channels, seq, generator=g) - 1)
    u = torch.randn(batch, channels, seq, generator=g)
    A = -torch.rand(channels, states, generator=g) - 0.5
    B = torch.randn(batch, states, seq, generator=g)
    C = torch.randn(batch, states, seq, generator=g)
    delta, u, B, C = (t.to(dtype) for t in (delta, u, B, C))
    return [t.to(device) for t in (delta, u, A, B, C)]


def main():
    for dtype in (torch.float32, torch.bfloat16):
        args = inputs(dtype=dtype)
        out = selective_scan(*args)
        tol = 1e-4 if dtype == torch.float32 else 3e-2
        torch.testing.assert_close(out.cpu().float(), reference(*args), rtol=tol, atol=tol)
        print(f"selective_scan {dtype}: matches torch; {nki_selective_scan.last_report}")


if __name__ == "__main__":
    main()
