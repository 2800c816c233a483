"""The Tensor Engine: ``nc_matmul`` (PSUM accumulation) and ``nc_transpose``."""

from __future__ import annotations

import math

import torch

from ...runtime.engines import Engine
from .. import dtypes, execution
from ..dynamic import DynamicTensor
from ..errors import fail
from ..indexed import IndexedTensor
from ..isa_common import ON_CHIP, PSUM, PSUM_ONLY, SBUF, SBUF_ONLY, f32, operand, record, write
from ..tensor import NkiTensor
from .arguments import engine_name, mask_of
from .enums import engine, matmul_perf_mode

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


def _indirect_rules(stationary, moving, is_transpose, tile_position, tile_size):
    """AWS's nc_matmul page: tensor indirection is incompatible with hardware tiling and with
    an indirect moving operand in transpose mode."""
    pairs = (("stationary", stationary), ("moving", moving))
    ti = [r for r, x in pairs if x.__class__ is DynamicTensor]
    if not ti:
        return
    if is_transpose and "moving" in ti:
        fail("nisa.nc_matmul(is_transpose=True): moving cannot use tensor indirection")
    if any(int(v) for v in tile_position) or tile_size:
        fail(
            f"nisa.nc_matmul: tensor indirection ({', '.join(ti)}) is incompatible with hardware "
            f"tiling: leave tile_position/tile_size unset"
        )


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
    if isinstance(dst, IndexedTensor):
        fail("nisa.nc_matmul: dst must be a plain PSUM tile view, not an index expression")
    operand(ex, "nc_matmul", "dst", dst, PSUM_ONLY, psum_state=False)
    if dst.storage.readonly is not None:
        fail(f"nisa.nc_matmul writes to {dst.storage.readonly}, which is not declared mutable")
    _indirect_rules(stationary, moving, is_transpose, tile_position, tile_size)
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
    acc = psum_accumulation("nc_matmul", dst, accumulate)
    ex.stats.flops += 2.0 * M * N * contraction
    bits = 8 * max(dtypes.itemsize(sd), dtypes.itemsize(md))
    tl = ex.timeline
    record(
        ex,
        Engine.tensor,
        moving,
        2,
        seconds=tl.matmul_seconds(N, bits, double) if tl is not None else None,
    )
    if ex.compute:
        a = _mm_read(stationary, "stationary").reshape(contraction, M)
        b = _mm_read(moving, "moving").reshape(contraction, N)
        m = mask_of(mask, dst)
        if m is None and dst.__class__ is NkiTensor and dst.dtype is torch.float32:
            # straight into PSUM: a new tile is not filled first, no result-sized temporary
            if acc:
                d = dst.tensor
                d.add_(torch.mm(a.t(), b).reshape(d.shape))
            else:
                d = dst.overwrite_view()
                if d.dim() == 2 and d.is_contiguous():
                    torch.mm(a.t(), b, out=d)
                else:
                    d.copy_(torch.mm(a.t(), b).reshape(d.shape))
            return
        r = torch.mm(a.t(), b)
        if acc:
            r = r.reshape(dst.shape) + dst.tensor.float()
        write(dst, r, m)


def psum_accumulation(opcode: str, dst, accumulate) -> bool:
    """Whether a matmul into the PSUM view ``dst`` adds onto its running sum (``accumulate``
    True/False, or None: auto, as long as the view's accumulation group is open); records
    the view as matmul-initialised."""
    st = dst.storage
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
                f"nisa.{opcode}(accumulate=True) into a PSUM location where {why}; the first "
                f"matmul of an accumulation group must overwrite (accumulate=False)"
            )
        acc = True
    else:
        acc = False
    st.mm_live.add(key)
    st.mm_ever.add(key)
    st.value_init = False
    return acc


def nc_transpose(dst, data, engine=engine.unknown, name=None):
    """Swap the partition and free axes of ``data`` (Tensor Engine: <=128x128 SBUF->PSUM;
    Vector Engine: <=32x32)."""
    ex = execution.begin("nc_transpose")
    t = ex.target
    P, F = data.partitions, data.free_size
    vmax = t.vector_transpose_max
    if engine is None or engine is globals()["engine"].unknown:
        on_te = not (P <= vmax and F <= vmax and not (data.buffer is SBUF and dst.buffer is PSUM))
        eng = Engine.tensor if on_te else Engine.vector
    else:
        eng = engine_name(engine, Engine.tensor)
    if eng == Engine.tensor:
        operand(ex, "nc_transpose", "data", data, SBUF_ONLY)
        operand(ex, "nc_transpose", "dst", dst, PSUM_ONLY, write=True)
        if P > t.pmax or F > t.gemm_stationary_fmax:
            fail(f"nisa.nc_transpose: Tensor Engine transposes at most 128x128, data is {P}x{F}")
    elif eng == Engine.vector:
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
    if eng == Engine.tensor:
        ex.stats.flops += 2.0 * P * P * F
        record(ex, eng, data, seconds=tl.matmul_seconds(P, 16) if tl is not None else None)
    else:
        record(ex, eng, data)
    if ex.compute:
        write(dst, data.read().reshape(P, F).t())
