"""Data movement: DMA copies and transposes, engine copies, memset, predicated copy."""

from __future__ import annotations

import math
import warnings

import torch

from ...runtime.engines import Engine
from .. import dtypes, execution
from ..dynamic import VECTOR, DynamicTensor
from ..errors import fail
from ..isa_common import (
    DMA_OK,
    ON_CHIP,
    PSUM,
    SBUF_ONLY,
    operand,
    record,
    record_dma,
    same_free,
    unary_operands,
    write,
)
from ..tensor import NkiTensor
from .arguments import engine_name, mask_of
from .enums import dge_mode, engine, oob_mode


def dma_copy(
    dst,
    src,
    priority=None,
    oob_mode=oob_mode.error,
    dge_mode=dge_mode.unknown,
    engine=engine.unknown,
    name=None,
    mask=None,
):
    """Copy ``src`` to ``dst`` with the DMA engines (HBM/SBUF); casts through float32."""
    ex = execution.begin("dma_copy")
    operand(ex, "dma_copy", "dst", dst, DMA_OK, write=True)
    operand(ex, "dma_copy", "src", src, DMA_OK)
    if dst.shape != src.shape and dst.size != src.size:
        fail(
            f"nisa.dma_copy: src has {src.size} elements (shape {src.shape}) but dst has "
            f"{dst.size} (shape {dst.shape}); the element counts must match"
        )
    if mask is not None and tuple(src.shape) != tuple(dst.shape):
        fail("nisa.dma_copy: a mask needs src and dst of the same shape")
    _same_if_packed("dma_copy", dst, src)
    static = src.__class__ is not DynamicTensor and dst.__class__ is not DynamicTensor
    dge, rows = (None, 0) if static else _dge(dst, src, dge_mode)
    record_dma(ex, src.size * dtypes.itemsize(src.dtype), dge, rows)
    if ex.compute:
        if static and mask is None:  # the usual DMA: a view read, a view written
            _skip(oob_mode)
            v = src.read()
            if src.dtype != dst.dtype and dtypes.is_float(src.dtype) != dtypes.is_float(dst.dtype):
                v = v.float()
            write(dst, v)
            return
        m = mask_of(mask, dst)
        skip = _skip(oob_mode)
        out = _direct_out(src, dst, m)
        v, m = _read_dynamic("dma_copy", src, dst, m, skip, out)
        if out is not None and v is out:
            dst.storage.pending = None  # gathered straight into dst: every element written
            return
        if src.dtype != dst.dtype and dtypes.is_float(src.dtype) != dtypes.is_float(dst.dtype):
            v = v.float()
        _write_dynamic("dma_copy", dst, v, m, skip)


def _skip(mode) -> bool:
    """``oob_mode``: skip (True) or error (False) on an out-of-bounds dynamic index."""
    if mode is oob_mode.skip or mode == "skip":
        return True
    if mode is None or mode is oob_mode.error or mode == "error":
        return False
    fail(f"oob_mode={mode!r} is not an nki.isa.oob_mode value (error or skip)")


def _dge(dst, src, mode):
    """Descriptor generation of a DMA with a dynamic side: (kind, offsets) for the cost."""
    dyn = [t for t in (src, dst) if t.__class__ is DynamicTensor]
    if not dyn:
        return None, 0
    if any(t.kind == VECTOR for t in dyn):
        if mode in (dge_mode.hwdge, dge_mode.none):
            fail(
                f"nisa.dma_copy: an indirect (vector_offset) access needs software DGE; "
                f"dge_mode={mode.name} cannot gather or scatter (use dge_mode.swdge or unknown)"
            )
        return "swdge", sum(t.shape[0] for t in dyn if t.kind == VECTOR)
    return ("swdge" if mode is dge_mode.swdge else "hwdge"), 1


def _read_dynamic(opcode, src, dst, m, skip, out=None):
    """src's values, and the write mask with the rows a skipped out-of-bounds index drops
    (``out``: where a gather may put them directly)."""
    if src.__class__ is not DynamicTensor:
        return src.read(m), m
    v, ok = src.gather(opcode, skip, skip_ok=True, out=out)
    if ok is not None:
        ok = ok.reshape(dst.shape)
        m = ok if m is None else (m & ok)
    return v, m


def _direct_out(src, dst, m):
    """dst's memory when a gather can land there directly (a plain contiguous tile of src's
    dtype and shape, no mask, not src's storage): saves a tile-sized temporary and a copy."""
    if (
        src.__class__ is not DynamicTensor
        or m is not None
        or dst.__class__ is not NkiTensor
        or dst.dtype != src.dtype
        or dst.shape != src.shape
        or dst.storage is src.storage
        or not dst.is_contiguous()
    ):
        return None
    st = dst.storage
    if st.pending is not None and not dst.covers_storage():
        return None  # the rest of the tile must still get the uninitialised pattern first
    t = dst._t  # the view's torch view (no fill: it is overwritten)
    if t is None:
        t = dst._t = dst.flat.as_strided(dst.shape, dst.strides, dst.offset)
    return t if t.is_contiguous() else None


def _write_dynamic(opcode, dst, v, m, skip):
    if dst.__class__ is DynamicTensor:
        dst.write(v.reshape(dst.shape), m, opcode=opcode, skip=skip, skip_ok=True)
    else:
        write(dst, v, m)


def dma_transpose(
    dst,
    src,
    axes=None,
    priority=None,
    dge_mode=dge_mode.unknown,
    oob_mode=oob_mode.error,
    name=None,
):
    """Transpose ``src`` (HBM or SBUF) into SBUF with the DMA engines."""
    ex = execution.begin("dma_transpose")
    operand(ex, "dma_transpose", "dst", dst, SBUF_ONLY, write=True)
    operand(ex, "dma_transpose", "src", src, DMA_OK)
    if src.dtype != dst.dtype:
        fail(
            f"nisa.dma_transpose: src is {dtypes.name(src.dtype)} but dst is "
            f"{dtypes.name(dst.dtype)}; they must be the same dtype"
        )
    nd = len(src.shape)
    default = {2: (1, 0), 3: (2, 1, 0), 4: (3, 1, 2, 0)}
    if nd not in default:
        fail(f"nisa.dma_transpose supports 2-D to 4-D tiles, got {src.shape}")
    perm = tuple(axes) if axes is not None else default[nd]
    if perm != default[nd]:
        fail(f"nisa.dma_transpose: axes {perm} not supported for a {nd}-D tile; use {default[nd]}")
    shape = tuple(src.shape[a] for a in perm)
    if math.prod(dst.shape) != math.prod(shape) or dst.shape[0] != shape[0]:
        fail(
            f"nisa.dma_transpose: dst shape {dst.shape} does not match the transposed shape {shape}"
        )
    if dst.__class__ is DynamicTensor:
        fail("nisa.dma_transpose: dst cannot be a dynamic view (AWS: indirect src only)")
    if src.__class__ is DynamicTensor and src.kind == VECTOR:
        _indirect_transpose_rules(ex, src)
    dge, rows = _dge(dst, src, dge_mode)
    record_dma(ex, src.size * dtypes.itemsize(src.dtype), dge, rows)
    if ex.compute:
        v, m = _read_dynamic("dma_transpose", src, src, None, _skip(oob_mode))
        out = v.reshape(src.shape).permute(perm)
        write(
            dst, out, None if m is None else m.reshape(src.shape).permute(perm).reshape(dst.shape)
        )


def _indirect_transpose_rules(ex, src):
    """Software DGE's constraints on an indirect transpose (AWS, "Descriptor Generation Engine
    (DGE) Reference", swdge: indirect transpose)."""
    idx = src.index
    why = None
    if ex.target.nc_version < 3:
        why = "needs NeuronCore-v3 or newer"
    elif dtypes.itemsize(src.dtype) != 2:
        why = f"src must be a 2-byte dtype (float16/bfloat16), got {dtypes.name(src.dtype)}"
    elif src.shape[-1] > 128:
        why = f"src.shape[-1] must be <= 128, got {src.shape[-1]}"
    elif src.shape[0] % 16:
        why = f"src.shape[0] must be a multiple of 16, got {src.shape[0]}"
    elif len(src.shape) == 4 and 1 not in (src.shape[1], src.shape[2]):
        why = f"a 4-D src needs shape[1] or shape[2] == 1, got {src.shape}"
    elif idx.dtype is not torch.uint32 or len(idx.shape) != 2:
        why = f"the index must be a 2-D uint32 tile, got {dtypes.name(idx.dtype)} {idx.shape}"
    elif not (16 <= idx.shape[0] <= 128 and idx.shape[0] % 16 == 0):
        why = f"index.shape[0] must be in [16, 128] and a multiple of 16, got {idx.shape[0]}"
    elif idx.shape[1] > 1 and idx.shape[0] != 128:
        why = f"an index with {idx.shape[1]} columns needs 128 partitions, got {idx.shape[0]}"
    if why:
        fail(f"nisa.dma_transpose: indirect src ({src.what}): {why}")


def tensor_copy(dst, src, engine=engine.unknown, name=None, mask=None, dtype=None):
    """Copy an on-chip tile (SBUF/PSUM) with the Vector, Scalar or GpSimd Engine, casting to
    ``dst``'s dtype. ``dtype=`` (gone from the 2.33 signature, still in AWS's tutorials) is
    accepted and ``dst`` alone decides the output dtype: AWS's current matmul tutorial
    (nki-samples 6905a68, ``nki_matmul_hoist_load_``) passes ``dtype=bfloat16`` with a float32
    ``dst`` and casts on the DMA to HBM, so a differing ``dtype=`` is ignored with a warning."""
    ex = execution.begin("tensor_copy")
    if dtype is not None and dtypes.normalize(dtype) != dtypes.normalize(dst.dtype):
        warnings.warn(
            f"nisa.tensor_copy: dtype={dtypes.name(dtype)} ignored, dst's dtype "
            f"{dtypes.name(dst.dtype)} decides the output dtype (NKI 0.2+)",
            stacklevel=2,
        )
    eng = engine_name(engine, Engine.vector)
    unary_operands(ex, "tensor_copy", dst, src, "src")
    if eng == Engine.gpsimd and PSUM in (src.buffer, dst.buffer):
        fail("nisa.tensor_copy: the GpSimd Engine cannot access PSUM; use engine=vector or scalar")
    if eng not in (Engine.vector, Engine.scalar, Engine.gpsimd):
        fail(f"nisa.tensor_copy runs on the vector, scalar or gpsimd engine, not {eng}")
    _same_if_packed("tensor_copy", dst, src)
    record(ex, eng, src)
    if ex.compute:
        m = mask_of(mask, dst)
        v = src.read(m)
        if src.dtype != dst.dtype:
            v = v.float()
        write(dst, v, m)


def _same_if_packed(opcode, dst, src):
    """A packed MX tile moves as bits: both sides must have the same packed type."""
    if type(dst.dtype) is not dtypes.NkiOnlyDType and type(src.dtype) is not dtypes.NkiOnlyDType:
        return  # the common case: no packed type involved
    packed = [t for t in (dst, src) if dtypes.is_packed_mx(t.dtype)]
    if packed and src.dtype is not dst.dtype:
        fail(
            f"nisa.{opcode}: src is {dtypes.name(src.dtype)} and dst is {dtypes.name(dst.dtype)}; "
            f"a packed MX tile is copied as bits, to the same packed type only (quantize with "
            f"nisa.quantize_mx; view HBM bits with t.ap(..., dtype=nl.{packed[0].dtype.name}))"
        )


def memset(dst, value, engine=engine.unknown, name=None, mask=None):
    """Fill an on-chip tile with a compile-time constant."""
    ex = execution.begin("memset")
    eng = engine_name(engine, Engine.vector)
    operand(ex, "memset", "dst", dst, ON_CHIP, write=True)
    if not isinstance(value, (int, float, bool)):
        fail(f"nisa.memset: value must be a compile-time constant number, got {value!r}")
    if eng == Engine.gpsimd and dst.buffer is PSUM:
        fail("nisa.memset: the GpSimd Engine cannot access PSUM; use engine=vector")
    record(ex, eng, dst)
    if ex.compute:
        m = mask_of(mask, dst)
        # (not dst.tensor: reading that property fills a new tile's uninitialised pattern, a
        # wasted pass over memory the memset overwrites)
        if m is None and dst.__class__ is NkiTensor:
            st = dst.storage
            if st.shape is not None and dst.flat is st.flat and dst.covers_storage():
                # the whole tile: the value is written as a pending fill is, at the first
                # access that is not a full overwrite (a memset before a gather or DMA that
                # writes every element costs no pass over memory)
                st.pending, st.cover = value, None
            else:
                dst.overwrite_view().fill_(value)  # every element written: no pattern under it
        else:
            dst.write(torch.full(dst.shape, value, dtype=dtypes.storage_dtype(dst.dtype)), m)


def tensor_copy_predicated(dst, src, predicate, reverse_pred=False, name=None):
    """Copy ``src`` into ``dst`` where ``predicate`` is true (Vector Engine)."""
    ex = execution.begin("tensor_copy_predicated")
    operand(ex, "tensor_copy_predicated", "predicate", predicate, ON_CHIP)
    if not isinstance(src, (int, float)):
        operand(ex, "tensor_copy_predicated", "src", src, ON_CHIP)
        if src.buffer is PSUM and predicate.buffer is PSUM:
            fail("nisa.tensor_copy_predicated: src and predicate cannot both be in PSUM")
        if src.dtype != dst.dtype:
            fail(
                f"nisa.tensor_copy_predicated: src ({dtypes.name(src.dtype)}) and dst "
                f"({dtypes.name(dst.dtype)}) must share the same dtype"
            )
        same_free("tensor_copy_predicated", "dst", dst, "src", src)
    operand(ex, "tensor_copy_predicated", "dst", dst, ON_CHIP, write=True)
    if predicate.dtype not in (torch.uint8, torch.uint16, torch.uint32):
        fail(
            f"nisa.tensor_copy_predicated: predicate must be uint8, uint16 or uint32, got "
            f"{dtypes.name(predicate.dtype)}"
        )
    same_free("tensor_copy_predicated", "dst", dst, "predicate", predicate)
    record(ex, Engine.vector, dst, 2)
    if ex.compute:
        p = predicate.read().reshape(dst.shape) != 0
        if reverse_pred:
            p = ~p
        v = src if isinstance(src, (int, float)) else src.read().reshape(dst.shape)
        dst.write(v, p)
