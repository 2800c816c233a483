"""Tiled matmul with PSUM accumulation (the NKI matmul tutorial's tiled kernel).

    python examples/nki/matmul.py

``C[M, N] = lhsT.T @ rhs`` with ``lhsT[K, M]``: the contraction dim K sits on the partitions
(the Tensor Engine's layout). Each 128 x 512 output tile accumulates K/128 matmuls in one
PSUM bank (fp32), is evicted to SBUF (cast to the output dtype) and stored. Ragged M, N and K
use partial tiles.
"""

from __future__ import annotations

import torch

import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
from torch_neuronx import nki


@nki.jit
def nki_matmul_tiled(lhsT, rhs):
    K, M = lhsT.shape
    K_, N = rhs.shape
    assert K == K_, "lhsT and rhs must have the same contraction dimension"
    TILE_M = nl.tile_size.gemm_stationary_fmax  # 128
    TILE_K = nl.tile_size.pmax  # 128
    TILE_N = nl.tile_size.gemm_moving_fmax  # 512
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range((M + TILE_M - 1) // TILE_M):
        mr = min(TILE_M, M - m * TILE_M)
        for n in nl.affine_range((N + TILE_N - 1) // TILE_N):
            nc = min(TILE_N, N - n * TILE_N)
            res_psum = nl.ndarray((mr, nc), nl.float32, buffer=nl.psum)
            for k in nl.sequential_range((K + TILE_K - 1) // TILE_K):
                kr = min(TILE_K, K - k * TILE_K)
                lhsT_tile = nl.ndarray((kr, mr), dtype=lhsT.dtype, buffer=nl.sbuf)
                rhs_tile = nl.ndarray((kr, nc), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(
                    dst=lhsT_tile,
                    src=lhsT[k * TILE_K : k * TILE_K + kr, m * TILE_M : m * TILE_M + mr],
                )
                nisa.dma_copy(
                    dst=rhs_tile,
                    src=rhs[k * TILE_K : k * TILE_K + kr, n * TILE_N : n * TILE_N + nc],
                )
                # the first matmul of the group overwrites the PSUM bank, the next ones add
                nisa.nc_matmul(
                    dst=res_psum, stationary=lhsT_tile, moving=rhs_tile, accumulate=(k > 0)
                )
            res_sb = nl.ndarray((mr, nc), dtype=result.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=res_sb, src=res_psum)
            nisa.dma_copy(
                dst=result[m * TILE_M : m * TILE_M + mr, n * TILE_N : n * TILE_N + nc], src=res_sb
            )
    return result


@nki.nki_op("nki_examples::matmul", mutates_args={})
def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b; the kernel takes a transposed (a strided view of a: no copy)."""
    return nki_matmul_tiled(a.t(), b)


def reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (a.float() @ b.float()).to(a.dtype)


def main():
    for dtype in (torch.float32, torch.bfloat16):
        a = torch.randn(200, 300, dtype=dtype, device="neuron")
        b = torch.randn(300, 700, dtype=dtype, device="neuron")
        out = matmul(a, b)
        tol = dict(rtol=2e-2, atol=2e-2) if dtype == torch.bfloat16 else dict(rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(out.cpu().float(), reference(a, b).cpu().float(), **tol)
        print(f"matmul {dtype}: matches torch; {nki_matmul_tiled.last_report}")


if __name__ == "__main__":
    main()
