"""Cumulative sum along the last dim with the Vector Engine's scan instruction.

    python examples/nki/cumsum.py

Rows go to partitions (tiles of 128 rows), the scanned dim to the free axis in chunks of 512.
``nisa.tensor_tensor_scan`` with ``op0=multiply``, ``op1=add`` over a tile of ones computes
``r[i] = 1 * r[i-1] + x[i]``; each chunk starts from the last column of the previous chunk
(``initial`` is a per-partition column), so a row of any length is one scan per chunk.
"""

from __future__ import annotations

import torch

import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
from torch_neuronx import nki

TILE_P, TILE_F = 128, 512


@nki.jit
def nki_cumsum_kernel(x):
    """out[m, :] = cumsum(x[m, :]) for a 2-D tensor; the running sum is kept in float32."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    M, N = x.shape
    for m in nl.affine_range((M + TILE_P - 1) // TILE_P):
        rows = min(TILE_P, M - m * TILE_P)
        r = slice(m * TILE_P, m * TILE_P + rows)
        ones = nl.ndarray((rows, TILE_F), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=ones, value=1.0)
        carry = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=carry, value=0.0)
        for n in nl.sequential_range((N + TILE_F - 1) // TILE_F):  # chunks depend on each other
            cols = min(TILE_F, N - n * TILE_F)
            c = slice(n * TILE_F, n * TILE_F + cols)
            x_tile = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=x_tile, src=x[r, c])
            acc = nl.ndarray((rows, cols), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_tensor_scan(
                dst=acc,
                data0=ones[:, 0:cols],
                data1=x_tile,
                initial=carry,
                op0=nl.multiply,
                op1=nl.add,
            )
            nisa.tensor_copy(dst=carry, src=acc[:, cols - 1 : cols])
            y_tile = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=y_tile, src=acc)
            nisa.dma_copy(dst=out[r, c], src=y_tile)
    return out


@nki.nki_op("nki_examples::cumsum", mutates_args={})
def cumsum(x: torch.Tensor) -> torch.Tensor:
    return nki_cumsum_kernel(x)


def reference(x: torch.Tensor) -> torch.Tensor:
    return x.float().cumsum(dim=-1).to(x.dtype)


def main():
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.randn(200, 1300, dtype=dtype, device="neuron")
        out = cumsum(x)
        tol = 1e-4 if dtype == torch.float32 else 2e-2
        torch.testing.assert_close(
            out.cpu().float(), reference(x).cpu().float(), rtol=tol, atol=tol
        )
        print(f"cumsum {dtype}: matches torch; {nki_cumsum_kernel.last_report}")


if __name__ == "__main__":
    main()
