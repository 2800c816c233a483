"""``nki.isa``: the NeuronCore's instructions, simulated one vectorised torch op each.

Signatures follow AWS's NKI 0.7 (Neuron 2.33) API: the destination comes first (``dst``) and
is written in place. Every instruction checks the rules its AWS page states (buffers,
partition and free sizes, dtypes, PSUM banks) and raises :class:`NkiValidationError` naming
the kernel line. The legacy ``mask=`` keyword (``nl.arange`` predicates) is accepted.
"""

from __future__ import annotations

import enum
import math

import torch

from . import dtypes, execution
from .errors import NkiUnsupportedError, NkiValidationError, fail
from .indexing import mask_tensor
from .isa_common import (
    DMA_OK,
    ON_CHIP,
    PSUM,
    PSUM_ONLY,
    SBUF,
    SBUF_ONLY,
    f32,
    operand,
    record,
    record_dma,
    require_int,
    same_free,
    same_partitions,
    scalar_or_vector,
    unary_operands,
    write,
)
from .ops import ARITH, BITVEC, OPS
from .ops import get as _op
from .tensor import NkiTensor

__all__ = [
    "engine",
    "reduce_cmd",
    "dge_mode",
    "oob_mode",
    "matmul_perf_mode",
    "nc_version",
    "dma_engine",
    "NkiValidationError",
    "get_nc_version",
    "get_nc_sub_version",
    "dma_copy",
    "dma_transpose",
    "tensor_copy",
    "memset",
    "tensor_copy_predicated",
    "nc_matmul",
    "nc_transpose",
    "tensor_tensor",
    "tensor_scalar",
    "scalar_tensor_tensor",
    "tensor_reduce",
    "tensor_partition_reduce",
    "tensor_scalar_reduce",
    "activation",
    "activation_reduce",
    "reciprocal",
    "exponential",
    "iota",
    "affine_select",
    "select_reduce",
    "bn_stats",
    "bn_aggr",
]


class engine(enum.Enum):
    """Neuron Device engines."""

    unknown = 0
    tensor = 1
    scalar = 2
    gpsimd = 3
    dma = 4
    vector = 5
    sync = 6


tensor_engine, vector_engine, scalar_engine, gpsimd_engine, unknown_engine = (
    engine.tensor,
    engine.vector,
    engine.scalar,
    engine.gpsimd,
    engine.unknown,
)


class reduce_cmd(enum.Enum):
    """Engine accumulator register commands."""

    idle = 0
    reset = 1
    reduce = 2
    reset_reduce = 3
    load_reduce = 4


class dge_mode(enum.Enum):
    unknown = 0
    swdge = 1
    hwdge = 2
    none = 3


class oob_mode(enum.Enum):
    error = 0
    skip = 1


class matmul_perf_mode(enum.Enum):
    none = "none"
    double_row = "double_row"


class nc_version(enum.Enum):
    gen2 = 2
    gen3 = 3
    gen4 = 4


class dma_engine(enum.Enum):
    dma = 1
    gpsimd_dma = 2


def get_nc_version() -> nc_version:
    """The NeuronCore version of the emulated instance (gen3: Trn2, gen4: Trn3)."""
    from . import target

    return nc_version(target.current().nc_version)


def get_nc_sub_version() -> int:
    return 0


def _engine_name(e, default: str) -> str:
    if e is None or e is engine.unknown:
        return default
    if not isinstance(e, engine):
        fail(f"engine={e!r} is not an nki.isa.engine value")
    return e.name


def _mask(mask, x):
    return None if mask is None else mask_tensor(mask, x.shape)


# --------------------------------------------------------------------------- data movement
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
    if dst.size != src.size:
        fail(
            f"nisa.dma_copy: src has {src.size} elements (shape {src.shape}) but dst has "
            f"{dst.size} (shape {dst.shape}); the element counts must match"
        )
    if mask is not None and tuple(src.shape) != tuple(dst.shape):
        fail("nisa.dma_copy: a mask needs src and dst of the same shape")
    record_dma(ex, src.size * dtypes.itemsize(src.dtype))
    if ex.compute:
        m = _mask(mask, dst)
        v = src.read(m)
        if src.dtype != dst.dtype and dtypes.is_float(src.dtype) != dtypes.is_float(dst.dtype):
            v = v.float()
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
    record_dma(ex, src.size * dtypes.itemsize(src.dtype))
    if ex.compute:
        write(dst, src.read().permute(perm))


def tensor_copy(dst, src, engine=engine.unknown, name=None, mask=None):
    """Copy an on-chip tile (SBUF/PSUM) with the Vector, Scalar or GpSimd Engine."""
    ex = execution.begin("tensor_copy")
    eng = _engine_name(engine, "vector")
    unary_operands(ex, "tensor_copy", dst, src, "src")
    if eng == "gpsimd" and PSUM in (src.buffer, dst.buffer):
        fail("nisa.tensor_copy: the GpSimd Engine cannot access PSUM; use engine=vector or scalar")
    if eng not in ("vector", "scalar", "gpsimd"):
        fail(f"nisa.tensor_copy runs on the vector, scalar or gpsimd engine, not {eng}")
    record(ex, eng, src)
    if ex.compute:
        m = _mask(mask, dst)
        v = src.read(m)
        if src.dtype != dst.dtype:
            v = v.float()
        write(dst, v, m)


def memset(dst, value, engine=engine.unknown, name=None, mask=None):
    """Fill an on-chip tile with a compile-time constant."""
    ex = execution.begin("memset")
    eng = _engine_name(engine, "vector")
    operand(ex, "memset", "dst", dst, ON_CHIP, write=True)
    if not isinstance(value, (int, float, bool)):
        fail(f"nisa.memset: value must be a compile-time constant number, got {value!r}")
    if eng == "gpsimd" and dst.buffer is PSUM:
        fail("nisa.memset: the GpSimd Engine cannot access PSUM; use engine=vector")
    record(ex, eng, dst)
    if ex.compute:
        m = _mask(mask, dst)
        if m is None and hasattr(dst, "tensor"):
            dst.tensor.fill_(value)
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
    record(ex, "vector", dst, 2)
    if ex.compute:
        p = predicate.read().reshape(dst.shape) != 0
        if reverse_pred:
            p = ~p
        v = src if isinstance(src, (int, float)) else src.read().reshape(dst.shape)
        dst.write(v, p)


# --------------------------------------------------------------------------- Tensor Engine
_MM_IN = frozenset(
    {
        torch.float8_e4m3fn,
        torch.float8_e5m2,
        torch.bfloat16,
        torch.float16,
        torch.float32,
        dtypes.tfloat32,
    }
)


def _tf32(t: torch.Tensor) -> torch.Tensor:
    """Round float32 values to tfloat32 (10-bit mantissa), as the Tensor Engine reads them."""
    i = t.contiguous().view(torch.int32)
    i = (i + 0x1000) & ~0x1FFF
    return i.view(torch.float32)


def _mm_read(x, role) -> torch.Tensor:
    v = f32(x)
    if x.dtype is dtypes.tfloat32:
        v = _tf32(v)
    return v


def nc_matmul(
    dst,
    stationary,
    moving,
    is_stationary_onezero=False,
    is_moving_onezero=False,
    is_transpose=False,
    accumulate=None,
    tile_position=(),
    tile_size=(),
    perf_mode=matmul_perf_mode.none,
    name=None,
    mask=None,
):
    """``dst = stationary.T @ moving`` on the Tensor Engine (SBUF inputs, PSUM output, fp32
    accumulation); ``accumulate`` adds onto the PSUM location's running sum."""
    ex = execution.begin("nc_matmul")
    t = ex.target
    operand(ex, "nc_matmul", "stationary", stationary, SBUF_ONLY)
    operand(ex, "nc_matmul", "moving", moving, SBUF_ONLY)
    if dst.__class__.__name__ != "NkiTensor" and hasattr(dst, "base"):
        fail("nisa.nc_matmul: dst must be a plain PSUM tile view, not an index expression")
    operand(ex, "nc_matmul", "dst", dst, PSUM_ONLY, psum_state=False)
    if dst.storage.readonly is not None:
        fail(f"nisa.nc_matmul writes to {dst.storage.readonly}, which is not declared mutable")
    double = perf_mode is matmul_perf_mode.double_row or perf_mode == "double_row"
    sd, md = dtypes.normalize(stationary.dtype), dtypes.normalize(moving.dtype)
    for role, d in (("stationary", sd), ("moving", md)):
        if d not in _MM_IN:
            fail(
                f"nisa.nc_matmul: {role} is {dtypes.name(d)}; the Tensor Engine takes float8_e4m3/"
                f"float8_e5m2/bfloat16/float16/tfloat32/float32 inputs"
            )
    if dtypes.is_fp32_class(sd) != dtypes.is_fp32_class(md):
        fail(
            f"nisa.nc_matmul: stationary is {dtypes.name(sd)} and moving is {dtypes.name(md)}; "
            f"a float32/tfloat32 operand can only be paired with float32/tfloat32"
        )
    K = stationary.partitions
    if moving.partitions != K:
        fail(
            f"nisa.nc_matmul: stationary has {K} partitions and moving has {moving.partitions}; "
            f"the contraction (partition) dims must match"
        )
    rows = t.pmax
    cols = t.gemm_stationary_fmax
    if tile_size:
        rows, cols = int(tile_size[0]), int(tile_size[1])
        if rows not in (32, 64, 128) or cols not in (32, 64, 128):
            fail(
                f"nisa.nc_matmul: tile_size {tuple(tile_size)} must use 32, 64 or 128 rows/columns"
            )
        if tile_position:
            r0, c0 = int(tile_position[0]), int(tile_position[1])
            if r0 % rows or c0 % cols or r0 + rows > 128 or c0 + cols > 128:
                fail(
                    f"nisa.nc_matmul: tile_position {tuple(tile_position)} is not a multiple of "
                    f"tile_size {tuple(tile_size)} inside the 128x128 array"
                )
    if double:
        if sd not in dtypes.FP8 or md not in dtypes.FP8:
            fail("nisa.nc_matmul: perf_mode=double_row needs float8 stationary and moving tiles")
        if stationary.shape[1] != 2 or moving.shape[1] != 2:
            fail("nisa.nc_matmul: perf_mode=double_row needs shapes [K, 2, ...] for both operands")
        M = math.prod(stationary.shape[2:])
        N = math.prod(moving.shape[2:])
        contraction = 2 * K
    else:
        M, N, contraction = stationary.free_size, moving.free_size, K
    if K > rows:
        fail(
            f"nisa.nc_matmul: contraction (partition) size {K} exceeds {rows} rows of the "
            f"Tensor Engine"
        )
    if M > cols:
        fail(
            f"nisa.nc_matmul: stationary free size {M} exceeds {cols} (nl.tile_size."
            f"gemm_stationary_fmax): the stationary operand is at most 128x128; tile M"
        )
    dd = dtypes.normalize(dst.dtype)
    if is_transpose:
        if dd != sd and not (sd in dtypes.FP8 and dd in (torch.bfloat16, torch.float16)):
            fail(
                f"nisa.nc_matmul(is_transpose=True): dst must have the data's dtype "
                f"{dtypes.name(sd)}, got {dtypes.name(dd)}"
            )
    elif dd is not torch.float32 and not (t.nc_version >= 4 and dd is torch.bfloat16):
        allowed = "float32 or bfloat16" if t.nc_version >= 4 else "float32"
        fail(
            f"nisa.nc_matmul: the PSUM dst is {dtypes.name(dd)}; matmul accumulates in fp32 and "
            f"writes {allowed} on {t.label}"
        )
    nmax = t.moving_fmax(8 * dtypes.itemsize(dd))
    if N > nmax:
        fail(
            f"nisa.nc_matmul: moving free size {N} exceeds {nmax} (nl.tile_size.gemm_moving_fmax"
            f" on {t.label}: one matmul writes at most one PSUM bank of "
            f"{t.psum_bank_bytes // 4} fp32); the moving operand is at most 128x{nmax}; tile N"
        )
    if dst.partitions != M or dst.free_size != N:
        fail(
            f"nisa.nc_matmul: dst shape {dst.shape} must be ({M}, {N}) = (stationary free size, "
            f"moving free size)"
        )
    st = dst.storage
    # one matmul writes within a PSUM bank (NeuronCore-v2/v3) / the 8 banks (v4)
    if not dst.is_contiguous():
        fail("nisa.nc_matmul: dst must be a contiguous PSUM view (per partition)")
    F = st.partition_elems
    within = (dst.offset % F) * dtypes.itemsize(dd)
    end = within + N * dtypes.itemsize(dd)
    bank = t.psum_bank_bytes
    if t.nc_version <= 3 and within // bank != (end - 1) // bank:
        fail(
            f"nisa.nc_matmul: dst covers bytes [{within}, {end}) of each PSUM partition, crossing "
            f"the {bank}-byte bank boundary at {(within // bank + 1) * bank}; a matmul "
            f"accumulates into one PSUM bank ({bank // 4} fp32) on {t.label}"
        )
    key = (dst.offset, dst.shape, dst.strides)
    if accumulate is None:
        acc = key in st.mm_live
    elif accumulate:
        if key not in st.mm_ever:
            why = (
                "it was last written by a non-matmul instruction (memset/tensor_copy), which "
                "is undefined behaviour on NeuronCore-v2/v3"
                if st.value_init
                else "no matmul has initialised it"
            )
            fail(
                f"nisa.nc_matmul(accumulate=True) into a PSUM location where {why}; the first "
                f"matmul of an accumulation group must overwrite (accumulate=False)"
            )
        acc = True
    else:
        acc = False
    st.mm_live.add(key)
    st.mm_ever.add(key)
    st.value_init = False
    ex.stats.flops += 2.0 * M * N * contraction
    bits = 8 * max(dtypes.itemsize(sd), dtypes.itemsize(md))
    tl = ex.timeline
    record(
        ex,
        "tensor",
        moving,
        2,
        seconds=tl.matmul_seconds(N, bits, double) if tl is not None else None,
    )
    if ex.compute:
        a = _mm_read(stationary, "stationary").reshape(contraction, M)
        b = _mm_read(moving, "moving").reshape(contraction, N)
        r = torch.mm(a.t(), b)
        d = dst.tensor
        if acc:
            r = r.reshape(d.shape) + d.float()
        write(dst, r, _mask(mask, dst))


def nc_transpose(dst, data, engine=engine.unknown, name=None):
    """Swap the partition and free axes of ``data`` (Tensor Engine: <=128x128 SBUF->PSUM;
    Vector Engine: <=32x32)."""
    ex = execution.begin("nc_transpose")
    t = ex.target
    P, F = data.partitions, data.free_size
    vmax = t.vector_transpose_max
    if engine is None or engine is globals()["engine"].unknown:
        on_te = not (P <= vmax and F <= vmax and not (data.buffer is SBUF and dst.buffer is PSUM))
        eng = "tensor" if on_te else "vector"
    else:
        eng = _engine_name(engine, "tensor")
    if eng == "tensor":
        operand(ex, "nc_transpose", "data", data, SBUF_ONLY)
        operand(ex, "nc_transpose", "dst", dst, PSUM_ONLY, write=True)
        if P > t.pmax or F > t.gemm_stationary_fmax:
            fail(f"nisa.nc_transpose: Tensor Engine transposes at most 128x128, data is {P}x{F}")
    elif eng == "vector":
        operand(ex, "nc_transpose", "data", data, ON_CHIP)
        operand(ex, "nc_transpose", "dst", dst, ON_CHIP, write=True)
        if P > vmax or F > vmax:
            fail(
                f"nisa.nc_transpose: Vector Engine transposes at most {vmax}x{vmax}, data is "
                f"{P}x{F}; use engine=nki.isa.engine.tensor"
            )
    else:
        fail(f"nisa.nc_transpose runs on the tensor or vector engine, not {eng}")
    if dtypes.normalize(dst.dtype) != dtypes.normalize(data.dtype):
        fail(
            f"nisa.nc_transpose: dst is {dtypes.name(dst.dtype)} but data is "
            f"{dtypes.name(data.dtype)}; the output must have the input's dtype"
        )
    if dst.partitions != F or dst.free_size != P:
        fail(
            f"nisa.nc_transpose: dst shape {dst.shape} must be ({F}, {P}) for data of shape "
            f"{data.shape}"
        )
    tl = ex.timeline
    if eng == "tensor":
        ex.stats.flops += 2.0 * P * P * F
        record(ex, eng, data, seconds=tl.matmul_seconds(P, 16) if tl is not None else None)
    else:
        record(ex, eng, data)
    if ex.compute:
        write(dst, data.read().reshape(P, F).t())


# --------------------------------------------------------------------------- Vector / GpSimd ALU
def _alu_engine(engine_arg, op, tiles, default="vector"):
    eng = _engine_name(engine_arg, op.engine or default)
    if op.engine == "gpsimd" and eng != "gpsimd":
        eng = "gpsimd"
    if eng == "gpsimd" and any(x.buffer is PSUM for x in tiles if hasattr(x, "buffer")):
        fail(
            f"nl.{op.name} runs on the GpSimd Engine, which cannot access PSUM; keep its tiles "
            f"in SBUF"
        )
    return eng


def tensor_tensor(dst, data1, data2, op, engine=engine.unknown, name=None, mask=None):
    """Element-wise ``dst = data1 <op> data2`` (Vector or GpSimd Engine)."""
    ex = execution.begin("tensor_tensor")
    op = _op(op)
    if op.binary is None:
        fail(f"nisa.tensor_tensor: nl.{op.name} is not a binary operator")
    operand(ex, "tensor_tensor", "data1", data1, ON_CHIP)
    operand(ex, "tensor_tensor", "data2", data2, ON_CHIP)
    if data1.buffer is PSUM and data2.buffer is PSUM:
        fail("nisa.tensor_tensor: data1 and data2 cannot both be in PSUM (at most one PSUM input)")
    operand(ex, "tensor_tensor", "dst", dst, ON_CHIP, write=True)
    for role, x in (("data1", data1), ("data2", data2)):
        same_partitions("tensor_tensor", "dst", dst, role, x)
        same_free("tensor_tensor", "dst", dst, role, x)
    if op.kind == BITVEC:
        require_int("tensor_tensor", op, data1=data1, data2=data2, dst=dst)
    ints = all(x.dtype in (torch.int32, torch.uint32) for x in (data1, data2, dst))
    eng = _alu_engine(
        engine,
        op,
        (dst, data1, data2),
        "gpsimd" if ints and PSUM not in (data1.buffer, data2.buffer, dst.buffer) else "vector",
    )
    record(ex, eng, dst, 2)
    if ex.compute:
        if mask is None and _same_float(dst, data1, data2) and op.kind == ARITH:
            # torch computes 16-bit float ops in float32 and rounds once: the engine's result
            write(dst, op.binary(data1.tensor.reshape(dst.shape), data2.tensor.reshape(dst.shape)))
            return
        m = _mask(mask, dst)
        if op.kind == BITVEC or ints:
            a, b = data1.read(m).to(torch.int64), data2.read(m).to(torch.int64)
        else:
            a, b = f32(data1, m), f32(data2, m)
        write(dst, op.binary(a.reshape(dst.shape), b.reshape(dst.shape)), m)


_FAST = (torch.float32, torch.bfloat16, torch.float16)


def _same_float(dst, *xs) -> bool:
    """All plain views of one float dtype: torch's op in that dtype equals the engine's float32
    math followed by one rounding to the output dtype."""
    d = dst.dtype
    if d not in _FAST or dst.__class__ is not NkiTensor:
        return False
    for x in xs:
        if x.dtype is not d or x.__class__ is not NkiTensor:
            return False
    return True


def _apply_scalar(op, x, operand_, reverse):
    if op.binary is None:
        if op.unary is None:
            fail(f"nl.{op.name} is not an ALU operator")
        return op.unary(x)
    a, b = (operand_, x) if reverse else (x, operand_)
    if isinstance(a, float) and isinstance(b, torch.Tensor):
        a = torch.tensor(a, dtype=b.dtype)
    elif isinstance(b, float) and isinstance(a, torch.Tensor):
        b = torch.tensor(b, dtype=a.dtype)
    return op.binary(a, b)


def _scalar_operand_ok(opcode, op, value, role):
    if op.binary is None and op.unary is not None:
        if value not in (None, 0, 0.0):
            fail(f"nisa.{opcode}: {role} must be None or 0 for the unary operator nl.{op.name}")


def tensor_scalar(
    dst,
    data,
    op0,
    operand0,
    reverse0=False,
    op1=None,
    operand1=None,
    reverse1=False,
    engine=engine.unknown,
    name=None,
    mask=None,
):
    """``dst = (data <op0> operand0) <op1> operand1`` with scalar or per-partition operands."""
    ex = execution.begin("tensor_scalar")
    op0 = _op(op0, "op0")
    op1 = None if op1 is None else _op(op1, "op1")
    unary_operands(ex, "tensor_scalar", dst, data)
    if op1 is not None and (op0.kind == BITVEC) != (op1.kind == BITVEC):
        fail("nisa.tensor_scalar: op0 and op1 must both be bitvec or both arithmetic operators")
    bit = op0.kind == BITVEC
    if bit:
        require_int("tensor_scalar", op0, data=data, dst=dst)
    eng = _engine_name(engine, "vector")
    if eng == "scalar":
        pair = (op0.name, op1.name if op1 else None)
        if pair not in (("multiply", "add"), ("multiply", None), ("add", None)):
            fail(
                f"nisa.tensor_scalar on the Scalar Engine supports only (multiply, add), "
                f"(multiply, None) and (add, None); got {pair}"
            )
    if eng == "gpsimd" and op0.name != "rsqrt":
        fail("nisa.tensor_scalar runs on the GpSimd Engine only for nl.rsqrt")
    if eng == "gpsimd" and PSUM in (dst.buffer, data.buffer):
        fail("nisa.tensor_scalar: the GpSimd Engine cannot access PSUM")
    _scalar_operand_ok("tensor_scalar", op0, operand0, "operand0")
    v0 = (
        None
        if op0.binary is None
        else scalar_or_vector(ex, "tensor_scalar", "operand0", operand0, data, fp32_only=not bit)
    )
    v1 = None
    if op1 is not None:
        _scalar_operand_ok("tensor_scalar", op1, operand1, "operand1")
        v1 = (
            None
            if op1.binary is None
            else scalar_or_vector(
                ex, "tensor_scalar", "operand1", operand1, data, fp32_only=not bit
            )
        )
    elif operand1 is not None:
        fail("nisa.tensor_scalar: operand1 given without op1")
    record(ex, eng, dst)
    if ex.compute:
        if (
            mask is None
            and op1 is None
            and not bit
            and isinstance(v0, float)
            and _same_float(dst, data)
        ):
            write(dst, _apply_scalar(op0, data.tensor.reshape(dst.shape), v0, reverse0))
            return
        m = _mask(mask, dst)
        x = data.read(m).to(torch.int64) if bit else f32(data, m)
        if bit:
            v0 = int(v0) if isinstance(v0, float) else v0
            v1 = int(v1) if isinstance(v1, float) else v1
        r = _apply_scalar(op0, x, v0, reverse0)
        if op1 is not None:
            r = _apply_scalar(op1, r, v1, reverse1)
        write(dst, r, m)


def scalar_tensor_tensor(
    dst, data, op0, operand0, op1, operand1, reverse0=False, reverse1=False, name=None, mask=None
):
    """``dst = (data <op0> operand0) <op1> operand1``: a scalar/vector step then a tile step."""
    ex = execution.begin("scalar_tensor_tensor")
    op0, op1 = _op(op0, "op0"), _op(op1, "op1")
    if BITVEC in (op0.kind, op1.kind):
        fail("nisa.scalar_tensor_tensor supports arithmetic operators only")
    operand(ex, "scalar_tensor_tensor", "data", data, ON_CHIP)
    operand(ex, "scalar_tensor_tensor", "operand1", operand1, ON_CHIP)
    if data.buffer is PSUM and operand1.buffer is PSUM:
        fail("nisa.scalar_tensor_tensor: data and operand1 cannot both be in PSUM")
    operand(ex, "scalar_tensor_tensor", "dst", dst, ON_CHIP, write=True)
    for role, x in (("data", data), ("operand1", operand1)):
        same_partitions("scalar_tensor_tensor", "dst", dst, role, x)
        same_free("scalar_tensor_tensor", "dst", dst, role, x)
    v0 = scalar_or_vector(ex, "scalar_tensor_tensor", "operand0", operand0, data)
    record(ex, "vector", dst, 2)
    if ex.compute:
        m = _mask(mask, dst)
        r = _apply_scalar(op0, f32(data, m).reshape(dst.shape), v0, reverse0)
        o = f32(operand1, m).reshape(dst.shape)
        r = op1.binary(o, r) if reverse1 else op1.binary(r, o)
        write(dst, r, m)


def _axes(opcode, data, axis) -> tuple:
    if isinstance(axis, int):
        axis = (axis,)
    axis = tuple(sorted(int(a) + (data.ndim if int(a) < 0 else 0) for a in axis))
    nd = data.ndim
    if not axis or 0 in axis:
        fail(
            f"nisa.{opcode}: axis {axis} must name free dims; the partition dim (0) cannot be "
            f"reduced (transpose first, or use nc_matmul with a ones vector)"
        )
    if axis != tuple(range(axis[0], nd)):
        fail(
            f"nisa.{opcode}: axis {axis} must be the last contiguous free dim(s) ending at the "
            f"final dim {nd - 1} of a {nd}-D tile"
        )
    return axis


def tensor_reduce(dst, op, data, axis, negate=False, keepdims=False, name=None, mask=None):
    """Reduce the free axes ``axis`` of ``data`` with ``op`` (Vector Engine)."""
    ex = execution.begin("tensor_reduce")
    op = _op(op)
    if op.reduce is None:
        fail(
            f"nisa.tensor_reduce: nl.{op.name} is not a reduction operator (use nl.add, "
            f"nl.multiply, nl.maximum, nl.minimum, bitwise and/or/xor, logical and/or/xor)"
        )
    operand(ex, "tensor_reduce", "data", data, ON_CHIP)
    operand(ex, "tensor_reduce", "dst", dst, ON_CHIP, write=True)
    same_partitions("tensor_reduce", "dst", dst, "data", data)
    axes = _axes("tensor_reduce", data, axis)
    kept = math.prod(data.shape[1 : axes[0]])
    if dst.free_size != kept:
        fail(
            f"nisa.tensor_reduce: reducing axes {axes} of {data.shape} leaves {kept} element(s) "
            f"per partition, but dst {dst.shape} has {dst.free_size}"
        )
    if op.kind == BITVEC:
        require_int("tensor_reduce", op, data=data, dst=dst)
        if negate:
            fail("nisa.tensor_reduce: negate applies to arithmetic operators only")
    record(ex, "vector", data)
    if ex.compute:
        x = data.read().to(torch.int64) if op.kind == BITVEC else f32(data)
        r = op.reduce(x, axes)
        if negate:
            r = -r
        write(dst, r)


def tensor_partition_reduce(dst, op, data, name=None):
    """Reduce across the partitions of ``data`` (GpSimd Engine)."""
    ex = execution.begin("tensor_partition_reduce")
    op = _op(op)
    if op.name not in ("add", "average", "maximum", "max", "bitwise_or", "bitwise_and"):
        fail(
            f"nisa.tensor_partition_reduce supports add, average, max, bitwise_or, bitwise_and; "
            f"got nl.{op.name}"
        )
    operand(ex, "tensor_partition_reduce", "data", data, SBUF_ONLY)
    operand(ex, "tensor_partition_reduce", "dst", dst, SBUF_ONLY, write=True)
    same_free("tensor_partition_reduce", "dst", dst, "data", data)
    record(ex, "gpsimd", data)
    if ex.compute:
        bit = op.kind == BITVEC
        x = data.read().to(torch.int64) if bit else f32(data)
        x = x.reshape(data.partitions, -1)
        r = op.reduce(x, (0,)).reshape(1, -1)
        write(dst, r.expand(dst.partitions, -1) if dst.partitions > 1 else r)


def _regs(ex, attr, P):
    r = getattr(ex, attr)
    if r is None or r.shape[0] != P:
        r = torch.zeros(P, dtype=torch.float32, device="meta" if ex.abstract else "cpu")
        setattr(ex, attr, r)
    return r


def _reduce_res(ex, opcode, reduce_res, data):
    if reduce_res is None:
        return None
    operand(ex, opcode, "reduce_res", reduce_res, ON_CHIP, write=True)
    if reduce_res.partitions != data.partitions or reduce_res.free_size != 1:
        fail(
            f"nisa.{opcode}: reduce_res must have shape ({data.partitions}, 1), got "
            f"{reduce_res.shape}"
        )
    return reduce_res


def _cmd(v):
    if isinstance(v, reduce_cmd):
        return v
    fail(f"reduce_cmd={v!r} is not an nki.isa.reduce_cmd value")


def activation(
    dst,
    op,
    data,
    bias=None,
    scale=1.0,
    reduce_op=None,
    reduce_res=None,
    reduce_cmd=reduce_cmd.idle,
    name=None,
    mask=None,
):
    """``dst = op(data * scale + bias)`` on the Scalar Engine, with an optional free-axis sum
    into the engine's reduce registers (read out into ``reduce_res``)."""
    ex = execution.begin("activation")
    op = _op(op)
    if op.act is None:
        fail(
            f"nisa.activation: nl.{op.name} is not a Scalar Engine activation function (see the "
            f"NKI activation function table)"
        )
    unary_operands(ex, "activation", dst, data)
    if isinstance(bias, (int, float)) and ex.target.nc_version < 3:
        fail("nisa.activation: a scalar bias needs NeuronCore-v3 or newer")
    if bias is not None and not isinstance(bias, (int, float)) and bias.dtype is dtypes.tfloat32:
        fail("nisa.activation: bias cannot be tfloat32")
    sc = scalar_or_vector(ex, "activation", "scale", scale, data, fp32_only=True)
    bi = scalar_or_vector(ex, "activation", "bias", bias, data, allow_none=True)
    cmd = _cmd(reduce_cmd)
    if reduce_op is not None:
        rop = _op(reduce_op, "reduce_op")
        if rop.name not in ("add", "sum"):
            fail(f"nisa.activation: reduce_op must be nl.add, got nl.{rop.name}")
        if cmd is globals()["reduce_cmd"].idle and reduce_res is not None:
            cmd = globals()["reduce_cmd"].reset_reduce  # reduce into reduce_res (older NKI form)
    rr = _reduce_res(ex, "activation", reduce_res, data)
    record(ex, "scalar", data)
    if ex.compute:
        if (
            mask is None
            and bi is None
            and isinstance(sc, float)
            and sc == 1.0
            and reduce_op is None
            and _same_float(dst, data)
        ):
            write(dst, op.act(data.tensor.reshape(dst.shape)))
            _accumulate(ex, "act_regs", data.partitions, cmd, None, rr, torch.add, 0.0)
            return
        m = _mask(mask, dst)
        x = f32(data, m).reshape(dst.shape)
        if not (isinstance(sc, float) and sc == 1.0):
            x = x * sc
        if bi is not None:
            x = x + bi
        y = op.act(x)
        write(dst, y, m)
        _accumulate(
            ex,
            "act_regs",
            data.partitions,
            cmd,
            y if reduce_op is not None else None,
            rr,
            torch.add,
            0.0,
        )
    elif rr is not None:
        pass


def _accumulate(ex, attr, P, cmd, values, reduce_res, fn, identity, init=None, negate=False):
    R = reduce_cmd
    regs = _regs(ex, attr, P)
    if cmd in (R.reset, R.reset_reduce):
        regs = torch.full_like(regs, identity)
    elif cmd is R.load_reduce:
        regs = torch.full_like(regs, 0.0) + (init if init is not None else 0.0)
    if values is not None and cmd in (R.reduce, R.reset_reduce, R.load_reduce):
        v = values.reshape(P, -1)
        red = v.sum(dim=1) if fn is torch.add else _red(fn, v)
        regs = fn(regs, red)
    setattr(ex, attr, regs)
    if reduce_res is not None:
        out = -regs if negate else regs
        write(reduce_res, out.reshape(reduce_res.shape))


def _red(fn, v):
    if fn is torch.maximum:
        return v.amax(dim=1)
    if fn is torch.minimum:
        return v.amin(dim=1)
    if fn is torch.mul:
        return v.prod(dim=1)
    return v.sum(dim=1)


def activation_reduce(
    dst, op, data, reduce_op, reduce_res, bias=None, scale=1.0, name=None, mask=None
):
    """``nisa.activation`` with ``reduce_cmd=reset_reduce`` and a ``reduce_res`` read-out."""
    return activation(
        dst,
        op,
        data,
        bias=bias,
        scale=scale,
        reduce_op=reduce_op,
        reduce_res=reduce_res,
        reduce_cmd=reduce_cmd.reset_reduce,
        name=name,
        mask=mask,
    )


def reciprocal(dst, data, name=None, mask=None):
    """``dst = 1 / data`` on the Vector Engine."""
    ex = execution.begin("reciprocal")
    unary_operands(ex, "reciprocal", dst, data)
    record(ex, "vector", data)
    if ex.compute:
        m = _mask(mask, dst)
        write(dst, torch.reciprocal(f32(data, m)), m)


_REDUCE_FN = {
    "add": (torch.add, 0.0),
    "sum": (torch.add, 0.0),
    "multiply": (torch.mul, 1.0),
    "maximum": (torch.maximum, -math.inf),
    "max": (torch.maximum, -math.inf),
    "minimum": (torch.minimum, math.inf),
    "min": (torch.minimum, math.inf),
}


def exponential(
    dst, src, max_value=0.0, reduce_res=None, reduce_cmd=reduce_cmd.idle, reduce_init=0.0, name=None
):
    """``dst = exp(src - max_value)`` on the Vector Engine (NeuronCore-v4 only)."""
    ex = execution.begin("exponential")
    if ex.target.nc_version < 4:
        fail(
            f"nisa.exponential is available only on NeuronCore-v4 (Trn3); this instance is "
            f"{ex.target.label}. Use nisa.activation(op=nl.exp, bias=-max) instead"
        )
    unary_operands(ex, "exponential", dst, src, "src")
    mv = scalar_or_vector(ex, "exponential", "max_value", max_value, src, fp32_only=True)
    rr = _reduce_res(ex, "exponential", reduce_res, src)
    record(ex, "vector", src)
    if ex.compute:
        y = torch.exp(f32(src).reshape(dst.shape) - mv)
        write(dst, y)
        _accumulate(
            ex,
            "vec_regs",
            src.partitions,
            _cmd(reduce_cmd),
            y,
            rr,
            torch.add,
            0.0,
            init=float(reduce_init) if isinstance(reduce_init, (int, float)) else None,
        )


def tensor_scalar_reduce(
    dst,
    data,
    op0,
    operand0,
    reduce_op,
    reduce_res=None,
    reverse0=False,
    reduce_cmd=reduce_cmd.reset_reduce,
    reduce_init=None,
    reduce_res_negate=False,
    name=None,
):
    """``tensor_scalar`` with one operator plus a free-axis reduction (Vector Engine)."""
    ex = execution.begin("tensor_scalar_reduce")
    op0 = _op(op0, "op0")
    if op0.kind == BITVEC:
        fail("nisa.tensor_scalar_reduce supports arithmetic operators only")
    rop = _op(reduce_op, "reduce_op")
    if rop.name not in _REDUCE_FN:
        fail(
            f"nisa.tensor_scalar_reduce: reduce_op must be nl.add, nl.multiply, nl.max or "
            f"nl.min, got nl.{rop.name}"
        )
    unary_operands(ex, "tensor_scalar_reduce", dst, data)
    _scalar_operand_ok("tensor_scalar_reduce", op0, operand0, "operand0")
    v0 = (
        None
        if op0.binary is None
        else scalar_or_vector(
            ex, "tensor_scalar_reduce", "operand0", operand0, data, fp32_only=True
        )
    )
    rr = _reduce_res(ex, "tensor_scalar_reduce", reduce_res, data)
    record(ex, "vector", data)
    if ex.compute:
        r = _apply_scalar(op0, f32(data).reshape(dst.shape), v0, reverse0)
        write(dst, r)
        fn, ident = _REDUCE_FN[rop.name]
        _accumulate(
            ex,
            "vec_regs",
            data.partitions,
            _cmd(reduce_cmd),
            r,
            rr,
            fn,
            ident,
            init=float(reduce_init) if isinstance(reduce_init, (int, float)) else None,
            negate=reduce_res_negate,
        )


# --------------------------------------------------------------------------- GpSimd patterns
def _pattern(opcode, pattern, dst):
    try:
        pat = [(int(s), int(n)) for s, n in pattern]
    except (TypeError, ValueError):
        fail(f"nisa.{opcode}: pattern must be a list of [step, num] pairs, got {pattern!r}")
    if not 1 <= len(pat) <= 4:
        fail(f"nisa.{opcode}: pattern has {len(pat)} dims; 1 to 4 are supported")
    n = math.prod(c for _, c in pat)
    if n != dst.free_size:
        fail(
            f"nisa.{opcode}: pattern {pat} generates {n} values per partition but dst {dst.shape} "
            f"has {dst.free_size}"
        )
    return pat


def _affine(pat, P, offset, channel_multiplier) -> torch.Tensor:
    v = torch.full((P, 1), int(offset), dtype=torch.int64)
    v = v + torch.arange(P, dtype=torch.int64).reshape(P, 1) * int(channel_multiplier)
    v = v.reshape((P,) + (1,) * len(pat))
    for d, (step, num) in enumerate(pat):
        shape = [1] * (len(pat) + 1)
        shape[d + 1] = num
        v = v + (torch.arange(num, dtype=torch.int64) * step).reshape(shape)
    return v.reshape(P, -1)


def iota(dst, pattern, offset=0, channel_multiplier=0, name=None):
    """Generate ``offset + partition * channel_multiplier + sum(step * index)`` (GpSimd)."""
    ex = execution.begin("iota")
    operand(ex, "iota", "dst", dst, SBUF_ONLY, write=True)
    pat = _pattern("iota", pattern, dst)
    record(ex, "gpsimd", dst)
    if ex.compute:
        v = _affine(pat, dst.partitions, offset, channel_multiplier)
        write(dst, v if not dtypes.is_float(dst.dtype) else v.float())


def affine_select(
    dst, pattern, channel_multiplier, on_true_tile, on_false_value, cmp_op=None, offset=0, name=None
):
    """Select ``on_true_tile`` where ``cmp_op(affine(pattern), 0)`` holds, else
    ``on_false_value`` (GpSimd); e.g. a causal mask."""
    ex = execution.begin("affine_select")
    cmp = OPS["equal"] if cmp_op is None else _op(cmp_op, "cmp_op")
    if cmp.binary is None:
        fail(f"nisa.affine_select: cmp_op nl.{cmp.name} is not a comparison operator")
    unary_operands(ex, "affine_select", dst, on_true_tile, "on_true_tile", SBUF_ONLY)
    if not isinstance(on_false_value, (int, float)):
        fail("nisa.affine_select: on_false_value must be a float32 scalar")
    pat = _pattern("affine_select", pattern, dst)
    record(ex, "gpsimd", dst)
    if ex.compute:
        aff = _affine(pat, dst.partitions, offset, channel_multiplier).float()
        pred = cmp.binary(aff, torch.zeros_like(aff)) != 0
        v = f32(on_true_tile).reshape(dst.partitions, -1)
        write(dst, torch.where(pred, v, torch.tensor(float(on_false_value))))


def select_reduce(
    dst,
    predicate,
    on_true,
    on_false,
    reduce_res=None,
    reduce_cmd=reduce_cmd.idle,
    reduce_op=None,
    reverse_pred=False,
    name=None,
):
    """``dst = predicate ? on_true : on_false`` with an optional max/min/add reduction."""
    ex = execution.begin("select_reduce")
    operand(ex, "select_reduce", "predicate", predicate, ON_CHIP)
    operand(ex, "select_reduce", "on_true", on_true, ON_CHIP)
    operand(ex, "select_reduce", "dst", dst, ON_CHIP, write=True)
    same_free("select_reduce", "dst", dst, "on_true", on_true)
    same_free("select_reduce", "dst", dst, "predicate", predicate)
    of = scalar_or_vector(ex, "select_reduce", "on_false", on_false, on_true)
    rop = OPS["maximum"] if reduce_op is None else _op(reduce_op, "reduce_op")
    if rop.name not in _REDUCE_FN:
        fail(
            f"nisa.select_reduce: reduce_op must be nl.maximum, nl.minimum or nl.add, got "
            f"nl.{rop.name}"
        )
    rr = _reduce_res(ex, "select_reduce", reduce_res, on_true)
    record(ex, "vector", dst, 2)
    if ex.compute:
        p = predicate.read().reshape(dst.shape) != 0
        if reverse_pred:
            p = ~p
        v = torch.where(
            p,
            f32(on_true).reshape(dst.shape),
            of if isinstance(of, torch.Tensor) else torch.tensor(of),
        )
        write(dst, v)
        fn, ident = _REDUCE_FN[rop.name]
        _accumulate(ex, "vec_regs", dst.partitions, _cmd(reduce_cmd), v, rr, fn, ident)


# --------------------------------------------------------------------------- statistics
def bn_stats(dst, data, name=None):
    """Per-partition (count, mean, variance*count) of the even and odd elements (6 values)."""
    ex = execution.begin("bn_stats")
    operand(ex, "bn_stats", "data", data, ON_CHIP)
    operand(ex, "bn_stats", "dst", dst, ON_CHIP, write=True)
    same_partitions("bn_stats", "dst", dst, "data", data)
    if data.free_size > ex.target.bn_stats_fmax:
        fail(
            f"nisa.bn_stats: data has {data.free_size} elements per partition, more than "
            f"{ex.target.bn_stats_fmax} (nl.tile_size.bn_stats_fmax); split the free dim and "
            f"aggregate with bn_aggr"
        )
    if dst.free_size != 6:
        fail(f"nisa.bn_stats: dst must hold 6 values per partition, has {dst.free_size}")
    record(ex, "vector", data)
    if ex.compute:
        x = f32(data).reshape(data.partitions, -1)
        outs = []
        for part in (x[:, 0::2], x[:, 1::2]):
            n = part.shape[1]
            mean = part.mean(dim=1) if n else torch.zeros(x.shape[0])
            m2 = ((part - mean[:, None]) ** 2).sum(dim=1) if n else torch.zeros(x.shape[0])
            outs += [torch.full_like(mean, float(n)), mean, m2]
        write(dst, torch.stack(outs, dim=1))


def bn_aggr(dst, data, name=None):
    """Combine ``bn_stats`` triples into a per-partition mean and variance."""
    ex = execution.begin("bn_aggr")
    operand(ex, "bn_aggr", "data", data, ON_CHIP)
    operand(ex, "bn_aggr", "dst", dst, ON_CHIP, write=True)
    same_partitions("bn_aggr", "dst", dst, "data", data)
    if data.free_size % 3:
        fail(
            f"nisa.bn_aggr: data must hold (count, mean, variance*count) triples; "
            f"{data.free_size} values per partition is not a multiple of 3"
        )
    if dst.free_size != 2:
        fail("nisa.bn_aggr: dst must hold 2 values (mean, variance) per partition")
    record(ex, "vector", data)
    if ex.compute:
        t = f32(data).reshape(data.partitions, -1, 3)
        n, mean, m2 = t[..., 0], t[..., 1], t[..., 2]
        total = n.sum(dim=1)
        mu = (n * mean).sum(dim=1) / total
        var = (m2 + n * (mean - mu[:, None]) ** 2).sum(dim=1) / total
        write(dst, torch.stack([mu, var], dim=1))


# --------------------------------------------------------------------------- not simulated
def _unsupported(name, why=""):
    def fn(*args, **kwargs):
        raise NkiUnsupportedError(
            f"nki.isa.{name} is not simulated by torch_neuronx.nki{why}; see docs/nki.md for the "
            f"covered instructions"
        )

    fn.__name__ = name
    fn.__doc__ = f"nki.isa.{name} (not simulated)"
    return fn


for _n, _why in [
    ("nc_matmul_mx", " (MXFP8/MXFP4 on NeuronCore-v4)"),
    ("quantize_mx", " (MX quantisation)"),
    ("activate2", ""),
    ("tensor_tensor_scan", ""),
    ("tensor_scalar_cumulative", ""),
    ("dropout", ""),
    ("range_select", ""),
    ("sequence_bounds", ""),
    ("local_gather", ""),
    ("nc_n_gather", ""),
    ("dma_compute", ""),
    ("max8", ""),
    ("nc_find_index8", ""),
    ("nc_match_replace8", ""),
    ("nc_stream_shuffle", ""),
    ("register_alloc", " (dynamic control flow with registers)"),
    ("register_load", ""),
    ("register_move", ""),
    ("register_store", ""),
    ("core_barrier", " (SPMD programs run one after another)"),
    ("sendrecv", ""),
    ("rng", ""),
    ("rand2", ""),
    ("rand_set_state", ""),
    ("rand_get_state", ""),
    ("set_rng_seed", ""),
    ("nonzero_with_count", ""),
    ("topk", ""),
]:
    globals()[_n] = _unsupported(_n, _why)


class VirtualRegister:
    """An engine register (dynamic control flow); not simulated."""

    def __init__(self, *a, **k):
        raise NkiUnsupportedError("nki.isa.VirtualRegister (dynamic control flow) is not simulated")


class NkiInstruction:
    """Handle of a traced instruction; the simulator executes instructions immediately."""

    def depends_on(self, *producers):
        return self
