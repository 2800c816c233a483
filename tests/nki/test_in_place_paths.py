"""Instructions that compute straight into dst's memory (tensor_tensor, tensor_scalar,
activation on float32 tiles) give the engine's result when dst is an input (the same view)
and when dst overlaps an input as a shifted view (then they fall back to reading everything
first), against PyTorch; and the deferred uninitialised fill still shows in a partial write."""

import torch

import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
from torch_neuronx import nki


@nki.jit
def overlapping(x, v):
    P, F = x.shape
    out = nl.ndarray((5, P, F), dtype=nl.float32, buffer=nl.shared_hbm)
    vv = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=vv, src=v)
    results = []
    for case in range(5):
        t = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        if case == 0:  # dst is data1 (the same view)
            nisa.tensor_tensor(dst=t, data1=t, data2=t, op=nl.multiply)
        elif case == 1:  # dst overlaps data1 shifted by one column
            nisa.tensor_tensor(dst=t[:, 1:F], data1=t[:, 0 : F - 1], data2=t[:, 1:F], op=nl.add)
        elif case == 2:  # in place with a per-partition operand and a second operator
            nisa.tensor_scalar(
                dst=t, data=t, op0=nl.subtract, operand0=vv, op1=nl.multiply, operand1=2.0
            )
        elif case == 3:  # shifted overlap
            nisa.tensor_scalar(dst=t[:, 0 : F - 1], data=t[:, 1:F], op0=nl.multiply, operand0=vv)
        else:  # activation in place (same storage): scale and bias then exp
            nisa.activation(dst=t, op=nl.exp, data=t, scale=0.5, bias=vv)
        results.append(t)
    for i, t in enumerate(results):
        nisa.dma_copy(dst=out[i], src=t)
    return out


def test_dst_aliasing_an_input_reads_before_writing():
    x, v = torch.randn(16, 24), torch.rand(16, 1)
    out = overlapping(x.to("neuron"), v.to("neuron")).cpu()
    shifted = x.clone()
    shifted[:, 1:] = x[:, :-1] + x[:, 1:]
    scaled = x.clone()
    scaled[:, :-1] = x[:, 1:] * v
    ref = [x * x, shifted, (x - v) * 2.0, scaled, torch.exp(x * 0.5 + v)]
    for got, want in zip(out, ref, strict=True):
        torch.testing.assert_close(got, want)


def test_a_partly_written_tile_still_reads_uninitialised_as_nan():
    @nki.jit
    def k(x):
        t = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t[:, 0:4], src=x)  # half of the tile
        r = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=r, op=nl.exp, data=t)  # the whole tile: into r directly
        out = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=r)
        return out

    x = torch.randn(4, 4)
    out = k(x.to("neuron")).cpu()
    torch.testing.assert_close(out[:, :4], torch.exp(x))
    assert torch.isnan(out[:, 4:]).all()
