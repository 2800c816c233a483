"""Tensor creation: ``nl.ndarray``, ``zeros``, ``ones``, ``full``, ``*_like``, constants,
random tiles, ``broadcast_to`` / ``expand_dims``.

``ndarray`` does not initialise memory (the simulator fills it with NaN / 0xA5 bytes);
``zeros``/``ones``/``full`` are an allocation plus a ``memset`` instruction (on chip) or a
DMA fill (HBM).
"""

from __future__ import annotations

import math

import torch

from .. import dtypes, execution, isa, placement
from ..alloc import ndarray as _alloc
from ..errors import fail
from ..storage import MemoryRegion
from ..tensor import NkiTensor
from ..tensor_base import register_language

sbuf = MemoryRegion.sbuf


def ndarray(shape, dtype, buffer=sbuf, name: str = "", address=None) -> NkiTensor:
    """Create a new (uninitialised) tensor of ``shape`` and ``dtype`` in ``buffer``;
    ``address=(partition_offset, free_offset)`` places an on-chip tile itself (direct
    allocation, its rules in nki/placement.py)."""
    t = _alloc(shape, dtype, buffer, name)
    if address is not None:
        st = t.storage
        nbytes = st.rec.bytes if st.rec is not None else 0
        places = placement.from_address(execution.current(), st.buffer, t.shape, nbytes, address)
        placement.attach(st, places, nbytes)
    return t


def _fill(t: NkiTensor, value):
    if t.buffer.on_chip:
        isa.memset(dst=t, value=value)
        return t
    ex = execution.begin("hbm_fill")
    from ..isa_common import DMA_OK, operand, record_dma

    operand(ex, "hbm_fill", "dst", t, DMA_OK, write=True)
    record_dma(ex, t.size * dtypes.itemsize(t.dtype))
    if ex.compute:
        t.tensor.fill_(value)
    return t


def zeros(shape, dtype, buffer=sbuf, name: str = "") -> NkiTensor:
    return _fill(_alloc(shape, dtype, buffer, name), 0)


def ones(shape, dtype, buffer=sbuf, name: str = "") -> NkiTensor:
    return _fill(_alloc(shape, dtype, buffer, name), 1)


def full(shape, fill_value, dtype, buffer=sbuf, name: str = "") -> NkiTensor:
    return _fill(_alloc(shape, dtype, buffer, name), fill_value)


def zeros_like(x, dtype=None, buffer=None, name: str = "") -> NkiTensor:
    return zeros(x.shape, dtype or x.dtype, buffer or sbuf, name)


def empty_like(x, dtype=None, buffer=None, name: str = "") -> NkiTensor:
    return _alloc(x.shape, dtype or x.dtype, buffer or x.buffer, name)


def shared_constant(constant, dtype=None) -> NkiTensor:
    """A shared-HBM tensor holding ``constant`` (numpy/torch array or a ``.npy`` path),
    loaded with the kernel (no instruction)."""
    if isinstance(constant, str):
        import numpy as np

        constant = np.load(constant)
    t = torch.as_tensor(constant)
    d = dtypes.normalize(dtype or t.dtype)
    out = _alloc(tuple(t.shape) or (1,), d, MemoryRegion.shared_hbm)
    if execution.current().compute:
        out.tensor.copy_(t.reshape(out.shape))
    return out


def shared_identity_matrix(n, dtype=dtypes.uint8, dst=None) -> NkiTensor:
    """An ``n x n`` identity matrix in SBUF (a constant: charged as one DMA load)."""
    n = int(n)
    out = dst if dst is not None else _alloc((n, n), dtype, sbuf)
    isa.dma_copy(dst=out, src=_identity_hbm(n, out.dtype))
    return out


def _identity_hbm(n, dtype) -> NkiTensor:
    ex = execution.current()
    t = _alloc((n, n), dtype, MemoryRegion.private_hbm)
    if ex.compute:
        t.tensor.copy_(torch.eye(n))
    return t


def random_seed(seed):
    """Seed ``nl.rand`` (``seed``: a [1, 1] SBUF/PSUM tile, or an int)."""
    ex = execution.current()
    if isinstance(seed, int):
        value = seed
    else:
        if not ex.compute:
            return
        value = int(seed.read().reshape(-1)[0].item())
    g = torch.Generator()
    g.manual_seed(value)
    ex.rng = g


def rand(shape, dtype, buffer=sbuf, name: str = "") -> NkiTensor:
    """A tile of uniform [0, 1) values (drawn from ``nl.random_seed``'s generator, else
    torch's default CPU generator)."""
    t = _alloc(shape, dtype, buffer, name)
    ex = execution.begin("rand")
    from ..isa_common import operand, record

    operand(ex, "rand", "dst", t, (MemoryRegion.sbuf, MemoryRegion.psum), write=True)
    record(ex, "gpsimd", t)
    if ex.compute:
        v = torch.rand(t.shape, generator=ex.rng)
        t.write(v)
    return t


def expand_dims(x, axis) -> NkiTensor:
    return x.expand_dim(axis)


def broadcast_to(x, shape, dtype=None) -> NkiTensor:
    """A new tile of ``shape`` holding ``x`` broadcast (numpy rules, same rank). A
    partition-dim broadcast (1 -> P) is a cross-partition copy: one GpSimd instruction."""
    shape = tuple(int(s) for s in shape)
    if len(shape) != len(x.shape):
        fail(f"nl.broadcast_to: target shape {shape} must have the rank of {x.shape}")
    for a, b in zip(x.shape, shape, strict=False):
        if a != b and a != 1:
            fail(f"nl.broadcast_to: cannot broadcast {x.shape} to {shape}")
    out_dtype = dtype or x.dtype
    if shape == tuple(x.shape) and dtype in (None, x.dtype):
        return x
    out = _alloc(shape, out_dtype, sbuf)
    if x.shape[0] == shape[0]:
        view = x
        for d in range(1, len(shape)):
            if x.shape[d] != shape[d]:
                view = view.broadcast(d, shape[d])
        isa.tensor_copy(dst=out, src=view)
        return out
    ex = execution.begin("broadcast_to")
    from ..isa_common import ON_CHIP, operand, record

    operand(ex, "broadcast_to", "src", x, ON_CHIP)
    operand(ex, "broadcast_to", "dst", out, ON_CHIP, write=True)
    record(ex, "gpsimd", out)
    if ex.compute:
        v = x.read()
        out.write(torch.broadcast_to(v if v.dtype == out.tensor.dtype else v.float(), shape))
    return out


def _numel(shape) -> int:
    return math.prod(shape)


# t.broadcast_to(shape) on NKI tensors
register_language(broadcast_to=broadcast_to)
