"""``neuronxcc.nki.isa`` (pre-0.2): instructions that *return* their result.

The old ISA calls allocate their output (``x = nisa.activation(np.exp, data, bias=b)``) and
take ``dtype=`` (the output dtype) and ``mask=``; NKI 0.2+ passes the destination instead
(``nisa.activation(dst=x, op=nl.exp, data=data, bias=b)``; NKI release notes 2.27: "all
nki.isa APIs have dst as an input param", "removed dtype and mask support"). Each function here
allocates the tile the old API returned (SBUF; PSUM for Tensor Engine results) and runs the
0.2+ instruction into it, so rules, errors and costs are the same as for a 0.2+ kernel.
Instructions whose old form already took ``dst`` (``dma_copy``, ``tensor_copy_predicated``)
and the enums are the 0.2+ ones.
"""

from __future__ import annotations

import torch

from .. import dtypes, execution
from .. import isa as _isa
from ..alloc import ndarray as _alloc
from ..errors import NkiUnsupportedError, fail
from ..indexed import IndexedTensor
from ..indexing import Idx, Mask, host, mask_tensor

# the 0.2+ names that the old API shares unchanged
from ..isa import (  # noqa: F401
    NkiValidationError,
    dge_mode,
    dma_copy,
    engine,
    get_nc_version,
    nc_version,
    oob_mode,
    reduce_cmd,
)
from ..isa_common import ON_CHIP, SBUF_ONLY, f32, operand, record, unary_operands, write
from ..storage import MemoryRegion
from .accumulate import note_matmul
from .blocks import BlockTensor

SBUF, PSUM = MemoryRegion.sbuf, MemoryRegion.psum

# the old module-level engine names (``engine=nisa.vector_engine``), the 0.2+ ``nisa.engine``
vector_engine = engine.vector
scalar_engine = engine.scalar
gpsimd_engine = engine.gpsimd
tensor_engine = engine.tensor
unknown_engine = engine.unknown


def _tile(x, role):
    if isinstance(x, BlockTensor):
        x._whole(f"{role} of an ISA instruction")
    return x


def _out(shape, dtype, like=None, buffer=SBUF):
    dt = dtypes.normalize(dtype) if dtype is not None else like.dtype
    shape = tuple(int(s) for s in shape)
    if len(shape) < 2:
        shape = shape + (1,) * (2 - len(shape))
    return _alloc(shape, dt, buffer)


def _masked_part(x, mask):
    """(the part of ``x`` that ``mask`` selects, its slices in ``x``'s grid): the old API's
    reductions and statistics read only the masked elements (e.g. a 512-wide index
    expression over a 256-column tile with ``mask=(i < 256)``). The mask must be a
    rectangle, as every mask of an affine bound is."""
    if mask is None:
        return x, None
    with host():
        m = mask_tensor(mask, x.shape)
        if bool(m.all()):
            return x, None
        nz = m.nonzero()
        if nz.numel() == 0:
            fail("the mask selects no element of the instruction's tile")
        lo, hi = nz.min(0).values, nz.max(0).values + 1
        box = tuple(slice(int(a), int(b)) for a, b in zip(lo, hi, strict=False))
        if not bool(m[box].all()):
            fail("a mask that is not a rectangle on a reduction is not simulated")
        if not isinstance(x, IndexedTensor):
            return x[box], box
        nd = len(x.shape)
        idx = []
        for i in x.index:
            i = i.reshape((1,) * (nd - i.dim()) + tuple(i.shape))
            idx.append(Idx(i[tuple(box[a] if i.shape[a] > 1 else slice(None) for a in range(nd))]))
    return IndexedTensor.make(x.base, tuple(idx)), box


def _rows(out, box):
    """The partitions of ``out`` that a masked input's rows map to."""
    return out if box is None else out[box[0]]


def _wider(a, b):
    """The old API's default output dtype of a two-input instruction: the more precise input."""
    da, db = a.dtype, b.dtype
    if da == db:
        return da
    fa, fb = dtypes.is_float(da), dtypes.is_float(db)
    if fa != fb:
        return da if fa else db
    return da if dtypes.itemsize(da) >= dtypes.itemsize(db) else db


def nc_matmul(
    stationary,
    moving,
    is_stationary_onezero=False,
    is_moving_onezero=False,
    is_transpose=False,
    tile_position=(),
    tile_size=(),
    mask=None,
    **kwargs,
):
    """``stationary.T @ moving`` into a new float32 PSUM tile (old form; ``+=`` onto a PSUM
    view adds it there)."""
    stationary, moving = _tile(stationary, "stationary"), _tile(moving, "moving")
    # the old compiler copied PSUM operands (e.g. a Tensor Engine transpose's result) to SBUF
    # itself; that copy is issued here as the instruction it was
    if stationary.buffer is PSUM:
        stationary = tensor_copy(stationary)
    if moving.buffer is PSUM:
        moving = tensor_copy(moving)
    if is_transpose:
        out = _out((stationary.free_size, stationary.partitions), stationary.dtype, buffer=PSUM)
    else:
        out = _out((stationary.free_size, moving.free_size), dtypes.float32, buffer=PSUM)
    _isa.nc_matmul(
        dst=out,
        stationary=stationary,
        moving=moving,
        is_stationary_onezero=is_stationary_onezero,
        is_moving_onezero=is_moving_onezero,
        is_transpose=is_transpose,
        tile_position=tile_position,
        tile_size=tile_size,
        mask=mask,
        **kwargs,
    )
    return note_matmul(out)


def nc_transpose(data, mask=None, dtype=None, engine=engine.unknown):
    """The transpose of ``data``: PSUM on the Tensor Engine, SBUF on the Vector Engine (<= 32x32),
    the engine chosen as the old compiler did when ``engine`` is unknown."""
    data = _tile(data, "data")
    P, F = data.partitions, data.free_size
    vmax = execution.current().target.vector_transpose_max
    on_vector = engine is _isa.engine.vector or (
        engine in (None, _isa.engine.unknown) and P <= vmax and F <= vmax
    )
    out = _out((F, P), None, data, SBUF if on_vector else PSUM)
    _isa.nc_transpose(dst=out, data=data, engine=_isa.engine.vector if on_vector else engine)
    if dtype is not None and dtypes.normalize(dtype) != out.dtype:
        return tensor_copy(out, dtype=dtype)
    return out


def activation(
    op,
    data,
    bias=None,
    scale=1.0,
    reduce_op=None,
    reduce_res=None,
    reduce_cmd=reduce_cmd.idle,
    mask=None,
    dtype=None,
):
    data = _tile(data, "data")
    out = _out(data.shape, dtype, data)
    _isa.activation(
        dst=out,
        op=op,
        data=data,
        bias=bias,
        scale=scale,
        reduce_op=reduce_op,
        reduce_res=reduce_res,
        reduce_cmd=reduce_cmd,
        mask=mask,
    )
    return out


def activation_reduce(op, data, reduce_op, reduce_res, bias=None, scale=1.0, mask=None, dtype=None):
    data = _tile(data, "data")
    out = _out(data.shape, dtype, data)
    _isa.activation_reduce(
        dst=out,
        op=op,
        data=data,
        reduce_op=reduce_op,
        reduce_res=reduce_res,
        bias=bias,
        scale=scale,
        mask=mask,
    )
    return out


def _trailing(data, axes, opcode):
    """``data`` with the reduced free axes moved last (a free view on a tile; the old API
    reduced any free axes), and the new axes."""
    nd = data.ndim
    axes = tuple(sorted(int(a) + (nd if int(a) < 0 else 0) for a in axes))
    if 0 in axes:
        fail(
            f"nisa.{opcode}: axis 0 is the partition dim; reduce across partitions with "
            f"nisa.tensor_partition_reduce or transpose first (nisa.nc_transpose)"
        )
    if axes == tuple(range(nd - len(axes), nd)):
        return data, axes
    from ..tensor import NkiTensor

    if not isinstance(data, NkiTensor):  # an index expression: materialise the grid first
        data = tensor_copy(data)
    kept = [d for d in range(nd) if d not in axes]
    return data.permute(kept + list(axes)), tuple(range(len(kept), nd))


def tensor_reduce(op, data, axis, mask=None, dtype=None, negate=False, keepdims=False):
    """Reduce free ``axis`` of ``data`` (any free axes, as in the old API) into a new tile."""
    data = _tile(data, "data")
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    nd = data.ndim
    norm = tuple(sorted(int(a) + (nd if int(a) < 0 else 0) for a in axes))
    if keepdims:
        shape = tuple(1 if d in norm else s for d, s in enumerate(data.shape))
    else:
        shape = tuple(s for d, s in enumerate(data.shape) if d not in norm)
    out = _out(shape, dtype, data)
    part, box = _masked_part(data, mask)
    dst = _rows(out, box)
    src, new_axes = _trailing(part, norm, "tensor_reduce")
    _isa.tensor_reduce(dst=dst, op=op, data=src, axis=new_axes, negate=negate, keepdims=keepdims)
    return out


def tensor_partition_reduce(op, data, mask=None, dtype=None):
    data = _tile(data, "data")
    out = _out((1,) + tuple(data.shape[1:]), dtype, data)
    _isa.tensor_partition_reduce(dst=out, op=op, data=data)
    return out


def tensor_tensor(data1, data2, op, dtype=None, mask=None, engine=engine.unknown):
    data1, data2 = _tile(data1, "data1"), _tile(data2, "data2")
    out = _out(data1.shape, dtype or _wider(data1, data2))
    _isa.tensor_tensor(dst=out, data1=data1, data2=data2, op=op, engine=engine, mask=mask)
    return out


def tensor_scalar(
    data,
    op0,
    operand0,
    reverse0=False,
    op1=None,
    operand1=None,
    reverse1=False,
    dtype=None,
    mask=None,
    engine=engine.unknown,
):
    data = _tile(data, "data")
    out = _out(data.shape, dtype, data)
    _isa.tensor_scalar(
        dst=out,
        data=data,
        op0=op0,
        operand0=operand0,
        reverse0=reverse0,
        op1=op1,
        operand1=operand1,
        reverse1=reverse1,
        engine=engine,
        mask=mask,
    )
    return out


def scalar_tensor_tensor(
    data, op0, operand0, op1, operand1, reverse0=False, reverse1=False, dtype=None, mask=None
):
    data = _tile(data, "data")
    out = _out(data.shape, dtype, data)
    _isa.scalar_tensor_tensor(
        dst=out,
        data=data,
        op0=op0,
        operand0=operand0,
        op1=op1,
        operand1=operand1,
        reverse0=reverse0,
        reverse1=reverse1,
        mask=mask,
    )
    return out


def tensor_scalar_reduce(
    data, op0, operand0, reduce_op, reduce_res, reverse0=False, dtype=None, mask=None
):
    """``(data op0 operand0)`` as a new tile, its ``reduce_op`` along the free axis into
    ``reduce_res`` (old form of ``nisa.tensor_scalar_reduce``)."""
    data = _tile(data, "data")
    if mask is not None:
        raise NkiUnsupportedError(
            "nisa.tensor_scalar_reduce(mask=...) is not simulated; slice data and reduce_res to "
            "the masked rectangle instead"
        )
    out = _out(data.shape, dtype, data)
    _isa.tensor_scalar_reduce(
        dst=out,
        data=data,
        op0=op0,
        operand0=operand0,
        reduce_op=reduce_op,
        reduce_res=reduce_res,
        reverse0=reverse0,
    )
    return out


def tensor_copy(src, mask=None, dtype=None, engine=engine.unknown):
    src = _tile(src, "src")
    out = _out(src.shape, dtype, src)
    _isa.tensor_copy(dst=out, src=src, engine=engine, mask=mask)
    return out


def tensor_copy_predicated(src, dst, predicate, mask=None, dtype=None, reverse_pred=False):
    _isa.tensor_copy_predicated(dst=dst, src=src, predicate=predicate, reverse_pred=reverse_pred)
    return dst


def reciprocal(data, dtype=None, mask=None):
    data = _tile(data, "data")
    out = _out(data.shape, dtype, data)
    _isa.reciprocal(dst=out, data=data, mask=mask)
    return out


def tensor_tensor_scan(
    data0, data1, initial, op0, op1, reverse0=False, reverse1=False, dtype=None, mask=None
):
    out = _out(data0.shape, dtype or _wider(data0, data1))
    _isa.tensor_tensor_scan(
        dst=out,
        data0=data0,
        data1=data1,
        initial=initial,
        op0=op0,
        op1=op1,
        reverse0=reverse0,
        reverse1=reverse1,
    )
    return out


def memset(shape, value, dtype, mask=None, engine=engine.unknown):
    out = _out(shape, dtype)
    _isa.memset(dst=out, value=value, engine=engine, mask=mask)
    return out


def _grid(x, shape, role, opcode):
    """The values of an nl.arange/nl.mgrid expression (or predicate) over a tile ``shape``."""
    if isinstance(x, Mask):
        return mask_tensor(x, shape)
    if isinstance(x, Idx):
        t = x.t
        if t.dim() < len(shape):
            t = t.reshape((1,) * (len(shape) - t.dim()) + tuple(t.shape))
        try:
            return torch.broadcast_to(t, shape)
        except RuntimeError:
            fail(f"nisa.{opcode}: {role} of shape {tuple(t.shape)} does not cover {shape}")
    fail(
        f"nisa.{opcode}: {role} must be an nl.arange/nl.mgrid expression (old API), got "
        f"{type(x).__name__}; in NKI 0.2+ pass pattern= and offset="
    )


def iota(expr, dtype, mask=None):
    """The values of the affine expression ``expr`` (old form of ``nisa.iota``) in a new tile."""
    ex = execution.begin("iota")
    shape = tuple(int(s) for s in expr.shape) if isinstance(expr, Idx) else None
    if shape is None:
        _grid(expr, (), "expr", "iota")
    if expr.grid is not None and len(expr.grid) >= len(shape):
        # an expression of an nl.mgrid spans the whole (dense) grid: ``nisa.iota(3 * g.y +
        # g.z)`` is a tile of the grid's shape (AWS's select_and_scatter kernel)
        shape = tuple(int(s) for s in torch.broadcast_shapes(shape, expr.grid))
    if len(shape) < 2:
        shape = (1,) * (2 - len(shape)) + shape
    out = _out(shape, dtype)
    operand(ex, "iota", "dst", out, SBUF_ONLY, write=True)
    record(ex, "gpsimd", out)
    if ex.compute:
        v = _grid(expr, out.shape, "expr", "iota")
        write(out, v.float() if dtypes.is_float(out.dtype) else v, mask_tensor(mask, out.shape))
    return out


def affine_select(pred, on_true_tile, on_false_value, mask=None, dtype=None):
    """``on_true_tile`` where the affine predicate ``pred`` (e.g. ``i_q >= i_k``) holds, else
    ``on_false_value`` (GpSimd; old form: NKI 0.2+ takes pattern, offset and cmp_op)."""
    ex = execution.begin("affine_select")
    on_true_tile = _tile(on_true_tile, "on_true_tile")
    out = _out(on_true_tile.shape, dtype, on_true_tile)
    # the old form took on_true_tile from PSUM too (AWS's flash-attention kernels select
    # straight from the QK^T matmul's PSUM tile); the result is in SBUF
    unary_operands(ex, "affine_select", out, on_true_tile, "on_true_tile", ON_CHIP)
    if not isinstance(on_false_value, (int, float)):
        fail("nisa.affine_select: on_false_value must be a float32 scalar")
    if not isinstance(pred, Mask):
        _grid(pred, out.shape, "pred", "affine_select")
    record(ex, "gpsimd", out)
    if ex.compute:
        p = _grid(pred, out.shape, "pred", "affine_select")
        v = f32(on_true_tile).reshape(out.shape)
        write(
            out,
            torch.where(p, v, torch.tensor(float(on_false_value))),
            mask_tensor(mask, out.shape),
        )
    return out


def dma_transpose(src, axes=None, mask=None, dtype=None):
    src = _tile(src, "src")
    shape = tuple(reversed(src.shape)) if axes is None else tuple(src.shape[a] for a in axes)
    out = _out(shape, dtype, src)
    _isa.dma_transpose(dst=out, src=src, axes=axes)
    return out


def bn_stats(data, mask=None, dtype=None):
    data = _tile(data, "data")
    out = _out((data.partitions, 6), dtype, data)
    part, box = _masked_part(data, mask)
    _isa.bn_stats(dst=_rows(out, box), data=part)
    return out


def bn_aggr(data, mask=None, dtype=None):
    data = _tile(data, "data")
    out = _out((data.partitions, 2), dtype, data)
    part, box = _masked_part(data, mask)
    _isa.bn_aggr(dst=_rows(out, box), data=part)
    return out


def max8(src, mask=None, dtype=None):
    src = _tile(src, "src")
    out = _out((src.partitions, 8), dtype, src)
    _isa.max8(dst=out, src=src)
    return out


def nc_find_index8(data, vals, mask=None, dtype=None):
    out = _out((data.partitions, 8), dtype or dtypes.uint32)
    _isa.nc_find_index8(dst=out, data=data, vals=vals)
    return out


def dropout(data, prob, mask=None, dtype=None):
    data = _tile(data, "data")
    out = _out(data.shape, dtype, data)
    _isa.dropout(dst=out, data=data, prob=prob)
    return out


def __getattr__(name):
    # a 0.2+ instruction without an old value-returning form here: say how to call it
    if name in _isa.__all__ or name in _isa.NOT_SIMULATED:
        target = getattr(_isa, name)

        def needs_dst(*args, **kwargs):
            if "dst" in kwargs:
                return target(*args, **kwargs)
            raise NkiUnsupportedError(
                f"nisa.{name} has no value-returning (neuronxcc.nki) form in this simulator; "
                f"call it as in NKI 0.2+: nisa.{name}(dst=..., ...)"
            )

        return needs_dst
    raise AttributeError(
        f"module 'neuronxcc.nki.isa' (torch_neuronx.nki.legacy.isa) has no {name!r}"
    )
