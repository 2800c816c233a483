"""Moving tiles: ``nl.load`` / ``store`` / ``copy`` / ``load_transpose2d``, the Tensor
Engine helpers ``nl.matmul`` / ``nl.transpose``, and tile assignment (``t[...] = v``)."""

from __future__ import annotations

import torch

from .. import dtypes, isa
from ..alloc import ndarray as _alloc
from ..dynamic import DynamicTensor
from ..errors import fail
from ..indexed import IndexedTensor
from ..numpy_names import legacy_active
from ..storage import MemoryRegion
from ..tensor import NkiTensor
from ..tensor_base import register_language

sbuf, psum = MemoryRegion.sbuf, MemoryRegion.psum

#: what the language functions take as a tile or view (dynamic views included: an
#: ``nl.load(table.vector_select(0, ids))`` is one indirect DMA)
_VIEWS = (NkiTensor, IndexedTensor, DynamicTensor)


def _tile_shape(src) -> tuple:
    shape = tuple(src.shape)
    if len(shape) == 1 and legacy_active():
        # the pre-0.2 language loads a 1-D view (``A[c0:c1, j]``, an integer index dropping
        # the free dim) as a partition-only tile, used as a per-partition column (AWS's Fused
        # Mamba tutorial: ``nisa.activation(..., scale=nl.load(A[c0:c1, i_state]))``)
        return (shape[0], 1)
    if len(shape) < 2:
        fail(
            f"nl.load of a {len(shape)}-D view {shape}: on-chip tiles are at least 2-D "
            f"(partition, free); load a 2-D view, e.g. t.reshape((1, {shape[0]}))"
        )
    return shape


def load(src, dtype=None, mask=None, **kwargs) -> NkiTensor:
    """Load an HBM tensor (view) into a new SBUF tile (a DMA)."""
    if not isinstance(src, _VIEWS):
        fail(f"nl.load: src must be an NKI tensor in HBM, got {type(src).__name__}")
    if src.buffer.on_chip:
        fail(
            f"nl.load: src must be in HBM, but it is in {src.buffer.value.upper()} (use nl.copy "
            f"for on-chip copies)"
        )
    tile = _alloc(_tile_shape(src), dtype or src.dtype, sbuf)
    isa.dma_copy(dst=tile, src=src, mask=mask)
    return tile


def load_transpose2d(src, dtype=None) -> NkiTensor:
    """Load a 2-D HBM tensor transposed (DMA transpose) into a new SBUF tile."""
    if len(src.shape) != 2:
        fail(f"nl.load_transpose2d needs a 2-D source, got {src.shape}")
    tile = _alloc((src.shape[1], src.shape[0]), src.dtype, sbuf)
    isa.dma_transpose(dst=tile, src=src)
    if dtype is not None and dtypes.normalize(dtype) != dtypes.normalize(src.dtype):
        return copy(tile, dtype=dtype)
    return tile


def store(dst, value, mask=None, **kwargs):
    """Store an SBUF tile into an HBM tensor (a DMA); a PSUM tile is first copied to SBUF."""
    if not isinstance(dst, _VIEWS) or dst.buffer.on_chip:
        fail("nl.store: dst must be an HBM tensor (view)")
    if not isinstance(value, _VIEWS):
        fail(f"nl.store: value must be an SBUF tile, got {type(value).__name__}")
    if value.buffer is psum:
        value = copy(value)
    isa.dma_copy(dst=dst, src=value, mask=mask)


def copy(x, dtype=None, mask=None, **kwargs) -> NkiTensor:
    """A new SBUF tile with the values of ``x`` (cast to ``dtype``)."""
    if not isinstance(x, _VIEWS):
        fail(f"nl.copy: x must be a tile, got {type(x).__name__}")
    out = _alloc(x.shape, dtype or x.dtype, sbuf)
    if x.buffer.on_chip:
        isa.tensor_copy(dst=out, src=x, mask=mask)
    else:
        isa.dma_copy(dst=out, src=x, mask=mask)
    return out


def assign(view, value):
    """``t[key] = value``: copy a tile (or fill a constant) into a view."""
    if isinstance(value, (int, float, bool)):
        if view.buffer.on_chip:
            isa.memset(dst=view, value=value)
        else:
            from .creation import _fill

            _fill(view, value)
        return
    if not isinstance(value, _VIEWS):
        fail(f"cannot assign {type(value).__name__} to an NKI tensor view")
    if _same_view(view, value):
        return  # ``t[k] += v`` already wrote t[k] in place (legacy PSUM accumulation)
    if view.buffer.on_chip and value.buffer.on_chip:
        isa.tensor_copy(dst=view, src=value)
    else:
        if value.buffer is psum:
            value = copy(value)
        isa.dma_copy(dst=view, src=value)


def _same_view(a, b) -> bool:
    return (
        isinstance(a, NkiTensor)
        and isinstance(b, NkiTensor)
        and a.storage is b.storage
        and a.offset == b.offset
        and a.shape == b.shape
        and a.strides == b.strides
        and a.dtype == b.dtype
    )


def matmul(x, y, transpose_x=False, mask=None) -> NkiTensor:
    """``x @ y`` (``x.T @ y`` with ``transpose_x=True``) into a new PSUM tile (float32)."""
    for role, t in (("x", x), ("y", y)):
        if not isinstance(t, NkiTensor) or t.buffer is not sbuf:
            fail(f"nl.matmul: {role} must be an SBUF tile")
    stationary = x
    if not transpose_x:
        stationary = copy(transpose(x))
    out = _alloc((stationary.free_size, y.free_size), dtypes.float32, psum)
    isa.nc_matmul(dst=out, stationary=stationary, moving=y, mask=mask)
    return out


def transpose(x, dtype=None) -> NkiTensor:
    """Swap the partition and free dims of a 2-D tile (Tensor Engine, into PSUM)."""
    if len(x.shape) != 2:
        fail(f"nl.transpose needs a 2-D tile, got {x.shape}")
    if x.buffer is sbuf:
        out = _alloc((x.shape[1], x.shape[0]), x.dtype, psum)
        isa.nc_transpose(dst=out, data=x, engine=isa.engine.tensor)
    else:
        out = _alloc((x.shape[1], x.shape[0]), x.dtype, sbuf)
        isa.nc_transpose(dst=out, data=x, engine=isa.engine.vector)
    if dtype is not None and dtypes.normalize(dtype) != dtypes.normalize(x.dtype):
        return copy(out, dtype=dtype)
    return out


def _is_tile(x) -> bool:
    return isinstance(x, _VIEWS)


__all__ = ["load", "load_transpose2d", "store", "copy", "assign", "matmul", "transpose"]

_ = torch  # torch is used by type hints in callers

# t[key] = value and t.astype(dtype) on NKI tensors
register_language(assign=assign, copy=copy)
