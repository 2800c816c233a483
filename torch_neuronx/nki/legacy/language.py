"""``neuronxcc.nki.language`` (pre-0.2): NKI 0.2+'s ``nki.language`` plus the old constructs.

What differs from ``torch_neuronx.nki.language``:

- ``par_dim`` and block dimensions in ``ndarray``/``zeros``/``ones``/``full``/``*_like``
  (:mod:`.blocks`);
- NumPy dtypes and NumPy functions as operators (translated while a legacy kernel runs, see
  nki/numpy_names.py);
- reductions (``nl.sum``/``max``/``min``/``prod``/``mean``/``var``/``all``) over any free
  axes, not only the trailing ones: the reduced axes are moved last first (a free view);
- ``fp32`` / ``bf16`` / ... value-range constants (``nl.fp32.min``);
- ``loop_reduce``: ``acc[...] = nl.loop_reduce(x, op, ...)`` reduces into ``acc`` in place.
"""

from __future__ import annotations

import math as _math

from ...nki.language import *  # noqa: F403 - the old language is a superset of the new one
from .. import dtypes as _dt
from .. import execution as _execution
from .. import isa as _isa_new
from .. import language as _nl
from .. import placement as _placement
from ..alloc import ndarray as _alloc
from ..errors import fail as _fail
from ..ops import OPS as _OPS
from ..ops import Op as _Op
from ..storage import MemoryRegion as _MR
from . import compiler as _ncc
from . import isa as _lisa
from .accumulate import note_matmul
from .bfloat16 import bfloat16  # noqa: F401 - nl.bfloat16 (old): NumPy asks for it by name
from .blocks import BlockTensor, PsumBlocks, par_dim, split_shape
from .loop_reduce import loop_reduce  # noqa: F401 - nl.loop_reduce

__all__ = ["par_dim", "BlockTensor"]  # plus everything of nki.language (star-imported)

sbuf, psum = _MR.sbuf, _MR.psum


def ndarray(shape, dtype, buffer=None, name: str = "", **kwargs):
    """A new tensor; dims in front of an ``nl.par_dim`` are block dims (one tile each)."""
    buffer = sbuf if buffer is None else buffer
    buffer, direct = _ncc.region_of(buffer)  # ncc.sbuf.alloc(...) / mod_alloc: placed blocks
    blocks, tile = split_shape(shape)
    if not blocks or not _MR(getattr(buffer, "value", buffer)).on_chip:
        t = _nl.ndarray(blocks + tile, dtype, buffer=buffer, name=name, **kwargs)
        under = t
    else:
        if kwargs.get("address") is not None:
            _fail(
                "nl.ndarray(address=...) places one tile; a tensor with block dims places its "
                "blocks with buffer=ncc.sbuf.alloc(...) / mod_alloc(...) (neuronxcc.nki.compiler)"
            )
        if _MR(getattr(buffer, "value", buffer)) is psum:
            # PSUM blocks are separate tiles with their own live ranges (blocks.PsumBlocks);
            # directly allocated (ncc.psum.mod_alloc ...), each block is placed where its
            # allocation function says
            dt = _dt.normalize(dtype)
            places = None
            if direct is not None:
                block_bytes = _math.prod(tile[1:]) * _dt.itemsize(dt)
                places = direct.places(_execution.current(), blocks, tile[0], block_bytes)
            return PsumBlocks(blocks, tile, dt, name, _psum_maker(blocks, places))
        # (B..., P, F...) is stored as NKI 0.2+'s replacement (P, B..., F...)
        under = _alloc((tile[0],) + blocks + tile[1:], dtype, buffer, name)
        t = BlockTensor(under, len(blocks))
    if direct is not None:
        st = under.storage
        block_bytes = _math.prod(tile[1:]) * _dt.itemsize(under.dtype)
        places = direct.places(_execution.current(), blocks, tile[0], block_bytes)
        _placement.attach(st, places, block_bytes)
    return t


def _psum_maker(blocks, places):
    """Allocates one block of a PSUM tensor with block dims (blocks.PsumBlocks)."""

    def make(b, shape, dtype, name, fill):
        t = _alloc(shape, dtype, psum, name)
        if places is not None:
            i = 0
            for k, n in zip(b, blocks, strict=True):
                i = i * n + k
            _placement.attach(t.storage, [places[i]], _math.prod(shape[1:]) * _dt.itemsize(dtype))
        if fill is not None:
            _isa_new.memset(dst=t, value=fill)
        return t

    return make


def _filled(shape, value, dtype, buffer, name):
    t = ndarray(shape, dtype, buffer=buffer, name=name)
    if isinstance(t, PsumBlocks):
        t.fill = value  # each block is set when it is first used
        return t
    whole = t.under if isinstance(t, BlockTensor) else t
    if whole.buffer.on_chip:
        _isa_new.memset(dst=whole, value=value)
    else:
        from ..language.creation import _fill

        _fill(whole, value)
    return t


def zeros(shape, dtype, buffer=None, name: str = "", **kwargs):
    return _filled(shape, 0, dtype, buffer, name)


def ones(shape, dtype, buffer=None, name: str = "", **kwargs):
    return _filled(shape, 1, dtype, buffer, name)


def full(shape, fill_value, dtype, buffer=None, name: str = "", **kwargs):
    return _filled(shape, fill_value, dtype, buffer, name)


def zeros_like(a, dtype=None, buffer=None, name: str = "", **kwargs):
    return zeros(a.shape, dtype or a.dtype, buffer=buffer or a.buffer, name=name)


def ones_like(a, dtype=None, buffer=None, name: str = "", **kwargs):
    return ones(a.shape, dtype or a.dtype, buffer=buffer or a.buffer, name=name)


def empty_like(a, dtype=None, buffer=None, name: str = "", **kwargs):
    return ndarray(a.shape, dtype or a.dtype, buffer=buffer or a.buffer, name=name)


def _legacy_reduction(opname):
    """nl.<reduction> of the old language: any free axes (moved last, a free view)."""
    base = _OPS[opname]
    isa_op = {"sum": "add", "max": "maximum", "min": "minimum", "prod": "multiply"}.get(opname)

    def reduce(x, axis, dtype=None, keepdims=False, mask=None, **kwargs):
        if isinstance(x, BlockTensor):
            x._whole(f"nl.{opname}")
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        nd = x.ndim
        norm = tuple(sorted(int(a) + (nd if int(a) < 0 else 0) for a in axes))
        trailing = norm == tuple(range(nd - len(norm), nd))
        if trailing or isa_op is None:
            return base.lang(x, axis, dtype=dtype, keepdims=keepdims, mask=mask, **kwargs)
        return _lisa.tensor_reduce(isa_op, x, norm, dtype=dtype, keepdims=keepdims, mask=mask)

    op = object.__new__(_Op)
    for slot in _Op.__slots__:
        setattr(op, slot, getattr(base, slot))
    op.lang = reduce
    return op


sum = _legacy_reduction("sum")  # noqa: A001 - NKI's names
max = _legacy_reduction("max")  # noqa: A001
min = _legacy_reduction("min")  # noqa: A001
prod = _legacy_reduction("prod")


def matmul(x, y, transpose_x=False, mask=None):
    """``nl.matmul`` (a new PSUM tile); ``psum[...] += nl.matmul(...)`` accumulates there."""
    # the old compiler copied PSUM operands (``nl.transpose``'s result) to SBUF itself; that
    # copy is issued here as the instruction it was (AWS's attention tutorial, attn_fwd_v1)
    if getattr(x, "buffer", None) is _MR.psum:
        x = _lisa.tensor_copy(x)
    if getattr(y, "buffer", None) is _MR.psum:
        y = _lisa.tensor_copy(y)
    return note_matmul(_nl.matmul(x, y, transpose_x=transpose_x, mask=mask))


class _Range:
    """Value range of a dtype (``nl.fp32.min`` in old kernels: the most negative float32)."""

    def __init__(self, dtype):
        import torch

        info = torch.finfo(_dt.storage_dtype(dtype))
        self.min, self.max, self.eps, self.tiny = info.min, info.max, info.eps, info.tiny


def finfo(dtype) -> _Range:
    """``nl.finfo(dtype)`` of the old language (``.min``, ``.max``, ``.eps``, ``.tiny``)."""
    return _Range(dtype)


fp32 = _Range(_dt.float32)
bf16 = _Range(_dt.bfloat16)
fp16 = _Range(_dt.float16)


def _with_directives(rng):
    def loop(*args, directives=None, **kwargs):
        # ``directives=ncc.no_reorder()`` (old loop hints): the simulator keeps program order
        return rng(*args, **kwargs)

    loop.__name__ = loop.__qualname__ = rng.__name__
    loop.__doc__ = rng.__doc__
    return loop


affine_range = _with_directives(_nl.affine_range)
sequential_range = _with_directives(_nl.sequential_range)
static_range = _with_directives(_nl.static_range)
