"""Helpers of the NKI tests: a kernel factory that wraps a tile-level body (load inputs to
SBUF, run the instructions under test, store the result), and moving inputs to the device."""

import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
from torch_neuronx import nki

DEV = "neuron"


def tile_kernel(body, name="tile_kernel"):
    """A kernel that DMAs each 2-D input into SBUF, calls ``body(*tiles)`` (which issues the
    instructions under test and returns a tile) and stores that tile to a new HBM output."""

    def kernel(*ins):
        tiles = []
        for x in ins:
            t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=x)
            tiles.append(t)
        r = body(*tiles)
        if r.buffer == nl.psum:
            s = nl.ndarray(r.shape, dtype=r.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=s, src=r)
            r = s
        out = nl.ndarray(r.shape, dtype=r.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=r)
        return out

    kernel.__name__ = name
    return nki.jit(kernel)


def on_dev(*tensors):
    return [t.to(DEV) for t in tensors]
