"""A row-parallel linear layer on two NeuronCores: each rank multiplies its shard of the
contraction dim on the Tensor Engine, then ``nki.collectives.all_reduce`` sums the partial
products so that every rank holds ``x @ w`` (Megatron-style tensor parallelism, in one kernel).

    python examples/nki/row_parallel_linear.py

Rank r holds ``xT[r]`` = its K-shard of ``x`` transposed (K/ranks, M) and ``w[r]`` (K/ranks, N).
Each 128 x 512 output tile accumulates the rank's K tiles in one PSUM bank (fp32), is evicted to
SBUF, all-reduced across the ranks in SBUF (float32: one rounding at the end, to the output
dtype) and stored. The ranks run together with ``nki.run_ranks``; the collective's time on the
CC-Cores is modeled from the project's collective model.
"""

from __future__ import annotations

import torch

import torch_neuronx.nki.collectives as ncc
import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
from torch_neuronx import nki


@nki.jit
def row_parallel_linear(xT, w, replica_group):
    """out[M, N] = sum over the ranks of xT.T @ w (this rank's shard: xT (K, M), w (K, N))."""
    K, M = xT.shape
    K_, N = w.shape
    assert K == K_, "xT and w must have the same (sharded) contraction dimension"
    TILE_M, TILE_K, TILE_N = 128, 128, 512
    out = nl.ndarray((M, N), dtype=xT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range((M + TILE_M - 1) // TILE_M):
        mr = min(TILE_M, M - m * TILE_M)
        for n in nl.affine_range((N + TILE_N - 1) // TILE_N):
            nc = min(TILE_N, N - n * TILE_N)
            partial = nl.ndarray((mr, nc), nl.float32, buffer=nl.psum)
            for k in nl.sequential_range((K + TILE_K - 1) // TILE_K):
                kr = min(TILE_K, K - k * TILE_K)
                x_tile = nl.ndarray((kr, mr), dtype=xT.dtype, buffer=nl.sbuf)
                w_tile = nl.ndarray((kr, nc), dtype=w.dtype, buffer=nl.sbuf)
                nisa.dma_copy(
                    dst=x_tile, src=xT[k * TILE_K : k * TILE_K + kr, m * TILE_M : m * TILE_M + mr]
                )
                nisa.dma_copy(
                    dst=w_tile, src=w[k * TILE_K : k * TILE_K + kr, n * TILE_N : n * TILE_N + nc]
                )
                nisa.nc_matmul(dst=partial, stationary=x_tile, moving=w_tile, accumulate=(k > 0))
            summed = nl.ndarray((mr, nc), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_copy(dst=summed, src=partial)
            # every rank's partial tile in, the sum over the ranks out (in place, in SBUF)
            ncc.all_reduce(srcs=[summed], dsts=[summed], replica_group=replica_group, op=nl.add)
            res = nl.ndarray((mr, nc), dtype=out.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=res, src=summed)
            nisa.dma_copy(
                dst=out[m * TILE_M : m * TILE_M + mr, n * TILE_N : n * TILE_N + nc], src=res
            )
    return out


def linear(x: torch.Tensor, w: torch.Tensor, ranks: int = 2) -> list:
    """``x @ w`` computed by ``ranks`` ranks (rank r on neuron:r), each holding a K-shard;
    returns every rank's copy of the result."""
    K = x.shape[1]
    assert K % ranks == 0
    s = K // ranks
    group = ncc.ReplicaGroup([list(range(ranks))])
    per_rank = []
    for r in range(ranks):
        dev = f"neuron:{r % torch.neuron.device_count()}"
        per_rank.append(
            (
                x[:, r * s : (r + 1) * s].t().contiguous().to(dev),
                w[r * s : (r + 1) * s].to(dev),
                group,
            )
        )
    return nki.run_ranks(row_parallel_linear, per_rank)


def reference(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """The same computation in torch: float32 accumulation, one rounding."""
    return (x.float() @ w.float()).to(x.dtype)


if __name__ == "__main__":
    torch.manual_seed(0)
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.randn(200, 512).to(dtype)
        w = torch.randn(512, 700).to(dtype)
        outs = linear(x, w)
        ref = reference(x, w)
        err = max((o.cpu().float() - ref.float()).abs().max().item() for o in outs)
        rep = row_parallel_linear.last_report
        print(
            f"{dtype}: {len(outs)} ranks agree: {all(torch.equal(o.cpu(), outs[0].cpu()) for o in outs)}, "
            f"max |err| vs torch {err:.3g}; per rank {rep.instructions.get('collective', 0)} "
            f"all-reduces, modeled {rep.modeled_seconds * 1e6:.1f} us "
            f"(CC-Cores {rep.modeled_busy.get('collective', 0) * 1e6:.1f} us)"
        )
