"""Row softmax: max, exp with a fused sum on the Scalar Engine, reciprocal, scale.

    python examples/nki/softmax.py

Each tile holds up to 128 rows. ``tensor_reduce`` gives the negated row max, ``activation``
computes ``exp(x - max)`` and sums it into its reduce registers in the same instruction
(``reduce_res``), ``reciprocal`` and ``tensor_scalar`` normalise.
"""

from __future__ import annotations

import torch

import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
from torch_neuronx import nki


@nki.jit
def nki_softmax_kernel(x):
    R, C = x.shape
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    P = nl.tile_size.pmax
    for t in nl.affine_range((R + P - 1) // P):
        rows = min(P, R - t * P)
        x_tile = nl.ndarray((rows, C), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=x_tile, src=x[t * P : t * P + rows, :])
        neg_max = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=neg_max, op=nl.maximum, data=x_tile, axis=1, negate=True)
        e = nl.ndarray((rows, C), dtype=nl.float32, buffer=nl.sbuf)
        total = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(
            dst=e,
            op=nl.exp,
            data=x_tile,
            bias=neg_max,
            reduce_op=nl.add,
            reduce_res=total,
            reduce_cmd=nisa.reduce_cmd.reset_reduce,
        )
        inv = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.reciprocal(dst=inv, data=total)
        y = nl.ndarray((rows, C), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=y, data=e, op0=nl.multiply, operand0=inv)
        nisa.dma_copy(dst=out[t * P : t * P + rows, :], src=y)
    return out


@nki.nki_op("nki_examples::softmax", mutates_args={})
def softmax(x: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dim of a 2-D tensor."""
    return nki_softmax_kernel(x)


def reference(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x.float(), dim=-1).to(x.dtype)


def main():
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.randn(300, 1000, dtype=dtype, device="neuron") * 4
        out = softmax(x)
        tol = dict(rtol=2e-2, atol=1e-3) if dtype == torch.bfloat16 else dict(rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(out.cpu().float(), reference(x).cpu().float(), **tol)
        print(f"softmax {dtype}: matches torch; {nki_softmax_kernel.last_report}")


if __name__ == "__main__":
    main()
