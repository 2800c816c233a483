"""Microscaling (OCP MX) on NeuronCore-v4: ``quantize_mx`` (Vector Engine) and
``nc_matmul_mx`` (Tensor Engine).

Layout (AWS's ``nki.isa.quantize_mx`` / ``nc_matmul_mx`` pages, 2.33): a packed element
(``float8_*_x4``: 32 bits, ``float4_e2m1fn_x4``: 16 bits) holds four values that are
contiguous along the contraction; an MX group is 8 partitions x 4 values (one packed column
of 8 partitions) and shares one E8M0 scale. Scales sit in the first 4 partitions of each
32-partition SBUF quadrant of the scale view: the group ``g`` (0..3) of quadrant ``q`` is
row ``32 q + g`` of the scale view, its column the packed column. Everything is one torch
operation over the whole tile (decode, scale, one matmul), no loop over groups.
"""

from __future__ import annotations

import torch

from ...runtime.engines import Engine
from .. import dtypes, execution
from ..errors import fail
from ..isa_common import PSUM_ONLY, SBUF_ONLY, operand, record, write
from .matmul import psum_accumulation

# OCP MX v1.0: emax of the element types (largest normal = 2^emax x mantissa)
_EMAX = {"float8_e4m3fn": 8, "float8_e5m2": 15, "float4_e2m1fn": 2}
_TORCH_FP8 = {"float8_e4m3fn": torch.float8_e4m3fn, "float8_e5m2": torch.float8_e5m2}
# FP4 E2M1 code points 0..7 (the sign is bit 3), OCP MX v1.0 table 5
_FP4 = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])
_FP4_LUT = torch.cat([_FP4, -_FP4])
_SCALE_TYPES = (torch.uint8, torch.float8_e8m0fnu)


def _v4(opcode: str, ex):
    if ex.target.nc_version < 4:
        fail(
            f"nisa.{opcode} is available only on NeuronCore-v4 and newer (Trn3); this is "
            f"{ex.target.label} (emulate a trn3 instance: TORCH_NEURONX_EMULATED_INSTANCE)"
        )


def _scale_rows(opcode: str, role: str, scale, partitions: int, columns: int) -> torch.Tensor:
    """The scale-view rows that hold the groups of ``partitions`` data partitions (checks
    the placement rules) as a long tensor, group order (quadrant major)."""
    if dtypes.normalize(scale.dtype) not in _SCALE_TYPES:
        fail(
            f"nisa.{opcode}: {role} is {dtypes.name(scale.dtype)}; MX scales are uint8 or "
            f"float8_e8m0fnu (E8M0 exponents)"
        )
    quadrants = partitions // 32
    need = 32 * (quadrants - 1) + 4
    if scale.partitions < need:
        fail(
            f"nisa.{opcode}: {role} has {scale.partitions} partitions; {partitions} data "
            f"partitions need {need} (4 scale partitions at the start of each of the "
            f"{quadrants} 32-partition quadrants the data spans)"
        )
    start = _start_partition(scale) % 32
    if start + 4 > 16:
        fail(
            f"nisa.{opcode}: {role} starts at partition {start} of its SBUF quadrant; scales "
            f"must lie in the first 16 partitions of each quadrant (start at most 12)"
        )
    if scale.free_size != columns:
        fail(
            f"nisa.{opcode}: {role} has {scale.free_size} elements per partition; it needs one "
            f"scale per packed column ({columns})"
        )
    return (torch.arange(quadrants)[:, None] * 32 + torch.arange(4)[None, :]).reshape(-1)


def _start_partition(t) -> int:
    F = t.storage.partition_elems
    return t.offset // F if F else 0


def _check_data(opcode: str, role: str, t):
    if not dtypes.is_packed_mx(t.dtype):
        fail(
            f"nisa.{opcode}: {role} is {dtypes.name(t.dtype)}; it must be a packed MX type "
            f"(nl.float8_e5m2_x4, nl.float8_e4m3fn_x4 or nl.float4_e2m1fn_x4)"
        )
    if t.partitions % 32 or not 32 <= t.partitions <= 128:
        fail(
            f"nisa.{opcode}: {role} has {t.partitions} partitions; MX data spans a multiple of "
            f"32 partitions (whole SBUF quadrants), at most 128"
        )


def decode(t) -> torch.Tensor:
    """The values of packed MX tile ``t`` as float32 ``(P, F, 4)`` (F packed columns)."""
    bits = t.read().contiguous().reshape(t.partitions, -1)
    kind = t.dtype.packed
    raw = bits.view(torch.uint8)  # little end first: value i of an element is byte/nibble i
    if kind == "float4_e2m1fn":
        codes = torch.stack([raw & 0xF, raw >> 4], dim=-1).reshape(raw.shape[0], -1)
        vals = _FP4_LUT[codes.long()]
    else:
        vals = raw.view(_TORCH_FP8[kind]).float()
    return vals.reshape(t.partitions, -1, 4)


def _scales(scale, rows: torch.Tensor) -> torch.Tensor:
    """2^(e - 127) per group, float32 ``(groups, columns)``; E8M0 255 is NaN."""
    s = scale.read().reshape(scale.partitions, -1)[rows]
    e = s.view(torch.uint8).float()
    v = torch.exp2(e - 127.0)
    return torch.where(e == 255, torch.nan, v)


def _dequantized(t, scale, rows) -> torch.Tensor:
    """``(4 P, F)`` float32: the contraction (partition x value-in-element) by column."""
    v = decode(t)  # (P, F, 4)
    s = _scales(scale, rows).repeat_interleave(8, dim=0)  # (P, F): 8 partitions per group
    return (v * s[:, :, None]).permute(0, 2, 1).reshape(-1, v.shape[1])


def nc_matmul_mx(
    dst,
    stationary,
    moving,
    stationary_scale,
    moving_scale,
    tile_position=None,
    tile_size=None,
    accumulate=None,
    name=None,
):
    """``dst = dequant(stationary).T @ dequant(moving)`` of MXFP8/MXFP4 tiles with their
    E8M0 scales, fp32 accumulation in PSUM (Tensor Engine, NeuronCore-v4)."""
    opc = "nc_matmul_mx"
    ex = execution.begin(opc)
    _v4(opc, ex)
    for role, x in (
        ("stationary", stationary),
        ("moving", moving),
        ("stationary_scale", stationary_scale),
        ("moving_scale", moving_scale),
    ):
        operand(ex, opc, role, x, SBUF_ONLY)
    operand(ex, opc, "dst", dst, PSUM_ONLY, psum_state=False)
    if dst.storage.readonly is not None:
        fail(f"nisa.{opc} writes to {dst.storage.readonly}, which is not declared mutable")
    _check_data(opc, "stationary", stationary)
    _check_data(opc, "moving", moving)
    K = stationary.partitions
    if moving.partitions != K:
        fail(
            f"nisa.{opc}: stationary has {K} partitions and moving has {moving.partitions}; "
            f"the contraction (partition) dims must match"
        )
    rows = 128
    if tile_size is not None or tile_position is not None:
        if tile_size is None or tile_position is None:
            fail(f"nisa.{opc}: tile_position and tile_size must both be set for row tiling")
        rows, cols = int(tile_size[0]), int(tile_size[1])
        r0, c0 = int(tile_position[0]), int(tile_position[1])
        if rows not in (32, 64, 128) or cols != 128:
            fail(
                f"nisa.{opc}: tile_size {tuple(tile_size)} must be (32|64|128, 128): only row "
                f"tiling"
            )
        if c0 != 0 or r0 % rows or r0 + rows > 128:
            fail(
                f"nisa.{opc}: tile_position {tuple(tile_position)} must be (a multiple of "
                f"{rows} below 128, 0)"
            )
    if K > rows:
        fail(f"nisa.{opc}: contraction of {K} partitions exceeds the row tile of {rows}")
    M, N = stationary.free_size, moving.free_size
    if M % 2 or M > 128:
        fail(f"nisa.{opc}: stationary free size {M} must be even and at most 128")
    dd = dtypes.normalize(dst.dtype)
    if dd not in (torch.float32, torch.bfloat16):
        fail(f"nisa.{opc}: dst is {dtypes.name(dd)}; it must be float32 or bfloat16")
    nmax = 512 if dd is torch.float32 else 1024
    if N > nmax:
        fail(f"nisa.{opc}: moving free size {N} exceeds {nmax} (dst {dtypes.name(dd)}); tile N")
    if dst.partitions != M or dst.free_size != N:
        fail(f"nisa.{opc}: dst shape {dst.shape} must be ({M}, {N}) = (stationary, moving free)")
    s_rows = _scale_rows(opc, "stationary_scale", stationary_scale, K, M)
    m_rows = _scale_rows(opc, "moving_scale", moving_scale, K, N)
    acc = psum_accumulation(opc, dst, accumulate)
    ex.stats.flops += 2.0 * M * N * 4 * K
    tl = ex.timeline
    # 4x the contraction of a BF16 matmul in a BF16 matmul's time (AWS: "4x throughput
    # compared to BF16/FP16 matrix multiplication")
    record(
        ex, Engine.tensor, moving, 2, seconds=tl.matmul_seconds(N, 16) if tl is not None else None
    )
    if ex.compute:
        a = _dequantized(stationary, stationary_scale, s_rows)
        b = _dequantized(moving, moving_scale, m_rows)
        r = torch.mm(a.t(), b)
        if acc:
            r = r.reshape(dst.shape) + dst.tensor.float()
        write(dst, r)


def quantize_mx(dst, src, dst_scale, name=None):
    """Quantize a float16/bfloat16 tile to MXFP8 (Vector Engine, NeuronCore-v4): per group of
    8 partitions x 4 values, the E8M0 scale ``2^(floor(log2(amax)) - emax + 1)`` (AWS: twice
    the OCP sample algorithm's, so the largest value rounds without saturating) and the fp8
    values ``src / scale``, rounded to nearest even."""
    opc = "quantize_mx"
    ex = execution.begin(opc)
    _v4(opc, ex)
    operand(ex, opc, "src", src, SBUF_ONLY)
    operand(ex, opc, "dst", dst, SBUF_ONLY, write=True)
    operand(ex, opc, "dst_scale", dst_scale, SBUF_ONLY, write=True)
    if dtypes.normalize(src.dtype) not in (torch.float16, torch.bfloat16):
        fail(f"nisa.{opc}: src is {dtypes.name(src.dtype)}; it must be float16 or bfloat16")
    if dst.dtype not in (dtypes.float8_e5m2_x4, dtypes.float8_e4m3fn_x4):
        fail(
            f"nisa.{opc}: dst is {dtypes.name(dst.dtype)}; it must be nl.float8_e5m2_x4 or "
            f"nl.float8_e4m3fn_x4 (quantize_mx produces MXFP8 only)"
        )
    P, F = src.partitions, src.free_size
    if P % 32 or not 32 <= P <= 128:
        fail(f"nisa.{opc}: src has {P} partitions; it must be a multiple of 32, at most 128")
    if F % 4:
        fail(f"nisa.{opc}: src has {F} elements per partition; it must be a multiple of 4")
    if dst.partitions != P or dst.free_size != F // 4:
        fail(
            f"nisa.{opc}: dst has shape {dst.shape}; it needs {P} partitions x {F // 4} packed "
            f"elements (a quarter of src's {F})"
        )
    rows = _scale_rows(opc, "dst_scale", dst_scale, P, F // 4)
    record(ex, Engine.vector, src)
    if not ex.compute:
        return
    kind = dst.dtype.packed
    x = src.read().float().reshape(P // 8, 8, F // 4, 4)
    amax = x.abs().amax(dim=(1, 3))  # (groups, packed columns)
    _, e = torch.frexp(amax)  # amax = m 2^e, m in [0.5, 1): floor(log2 amax) = e - 1
    exp = (e - _EMAX[kind]).clamp(-127, 127)
    bits = torch.where(torch.isfinite(amax), exp + 127, 255).to(torch.uint8)
    scale = torch.exp2(exp.float())[:, None, :, None]
    q = (x / scale).to(_TORCH_FP8[kind]).reshape(P, F)
    write(dst, q.view(torch.uint8).view(torch.int32).reshape(dst.shape))
    t = dst_scale.tensor
    try:
        t = t.view(torch.uint8).view(dst_scale.partitions, -1)
    except RuntimeError:
        fail(f"nisa.{opc}: dst_scale's free dims must be contiguous (a plain 2-D view)")
    t[rows] = bits  # only the scale rows: other partitions of the tile keep their values
