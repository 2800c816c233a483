"""``psum[...] += nisa.nc_matmul(...)`` of the pre-0.2 language: accumulation in PSUM.

The old API's matmul returned a PSUM tile and ``+=`` onto a PSUM view told the compiler to
accumulate the product there (AWS's flash-attention and matmul tutorials). Here the legacy
``nc_matmul`` / ``nl.matmul`` run at once into a fresh PSUM tile; when the very next thing the
kernel does is ``+=`` that tile onto a PSUM view, the product is added there in fp32 as the
Tensor Engine's accumulation would, with no further instruction counted (on the hardware the
matmul writes the destination directly). Any other ``+=`` is the 0.2+ meaning: an add
instruction and a copy.
"""

from __future__ import annotations

from .. import execution
from ..alloc import touch
from ..indexed import IndexedTensor
from ..isa_common import f32, write
from ..numpy_names import legacy_active
from ..storage import MemoryRegion
from ..tensor import NkiTensor
from ..tensor_base import LANGUAGE, register_language

_last = {"tile": None, "counter": -1}


def note_matmul(out: NkiTensor) -> NkiTensor:
    """Remember ``out`` (a legacy matmul's fresh PSUM result) for a following ``+=``."""
    _last["tile"] = out
    _last["counter"] = execution.current().counter
    return out


def _psum_shape(view):
    """(partitions, free size) of a PSUM destination of ``+=``: a view, or an ``nl.arange``
    index expression on a PSUM tile (``psum[ip, jf] += nisa.nc_matmul(...)``); else None."""
    if isinstance(view, NkiTensor) and view.buffer is MemoryRegion.psum:
        return view.partitions, view.free_size
    if isinstance(view, IndexedTensor) and view.base.buffer is MemoryRegion.psum:
        free = 1
        for s in view.shape[1:]:
            free *= s
        return view.shape[0], free
    return None


def _iadd(view, value):
    ex = execution.current_or_none()
    fresh = (
        ex is not None
        and legacy_active()
        and value is _last["tile"]
        and ex.counter == _last["counter"]
        and _psum_shape(view) == (value.partitions, value.free_size)
    )
    if not fresh:
        return LANGUAGE["add"](view, value)
    _last["tile"] = None
    rec = view.storage.rec
    # the first matmul into a PSUM tile nothing has touched yet starts the accumulation (the
    # compiler clears the accumulate flag): it writes, as onto zeros (AWS's attention tutorial
    # attn_fwd_v8a accumulates into an nl.ndarray PSUM tile, not nl.zeros)
    untouched = rec is not None and rec.first < 0
    if rec is not None:
        touch(ex, view.storage)
    if ex.compute:
        v = f32(value).reshape(view.shape)
        write(view, v if untouched else f32(view) + v)
    return view


register_language(iadd=_iadd)
