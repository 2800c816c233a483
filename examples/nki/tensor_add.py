"""Tensor add: the NKI tutorial kernel, on neuron tensors, as a PyTorch custom op.

    python examples/nki/tensor_add.py

The kernel tiles its inputs into 128 x 512 tiles (partition dim <= 128), loads each pair with
DMA, adds them on the Vector Engine and stores the sum. Ragged edges use smaller tiles.
"""

from __future__ import annotations

import torch

import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
from torch_neuronx import nki

TILE_M, TILE_N = 128, 512


@nki.jit
def nki_tensor_add_kernel(a_input, b_input):
    """c = a + b for 2-D tensors of any shape (tiles of at most 128 x 512)."""
    assert a_input.shape == b_input.shape and a_input.dtype == b_input.dtype
    c_output = nl.ndarray(a_input.shape, dtype=a_input.dtype, buffer=nl.shared_hbm)
    M, N = a_input.shape
    for m in nl.affine_range((M + TILE_M - 1) // TILE_M):
        for n in nl.affine_range((N + TILE_N - 1) // TILE_N):
            rows = min(TILE_M, M - m * TILE_M)
            cols = min(TILE_N, N - n * TILE_N)
            r = slice(m * TILE_M, m * TILE_M + rows)
            c = slice(n * TILE_N, n * TILE_N + cols)
            a_tile = nl.ndarray((rows, cols), dtype=a_input.dtype, buffer=nl.sbuf)
            b_tile = nl.ndarray((rows, cols), dtype=b_input.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=a_tile, src=a_input[r, c])
            nisa.dma_copy(dst=b_tile, src=b_input[r, c])
            c_tile = nl.ndarray((rows, cols), dtype=a_input.dtype, buffer=nl.sbuf)
            nisa.tensor_tensor(dst=c_tile, data1=a_tile, data2=b_tile, op=nl.add)
            nisa.dma_copy(dst=c_output[r, c], src=c_tile)
    return c_output


@nki.nki_op("nki_examples::tensor_add", mutates_args={})
def tensor_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return nki_tensor_add_kernel(a, b)


def reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a + b


def main():
    for dtype in (torch.float32, torch.bfloat16):
        a = torch.randn(300, 1100, dtype=dtype, device="neuron")
        b = torch.randn(300, 1100, dtype=dtype, device="neuron")
        out = tensor_add(a, b)
        torch.testing.assert_close(out.cpu(), reference(a, b).cpu())
        print(f"tensor_add {dtype}: matches torch; {nki_tensor_add_kernel.last_report}")


if __name__ == "__main__":
    main()
