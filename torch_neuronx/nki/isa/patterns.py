"""Index patterns and selection: ``iota``, ``affine_select`` (GpSimd), ``select_reduce`` and
``range_select`` (Vector Engine)."""

from __future__ import annotations

import math

import torch

from ...runtime.engines import Engine
from .. import dtypes, execution
from ..errors import fail
from ..isa_common import (
    ON_CHIP,
    SBUF_ONLY,
    f32,
    operand,
    record,
    same_free,
    scalar_or_vector,
    unary_operands,
    write,
)
from ..ops import CMP, OPS
from ..ops import get as _op
from .accumulators import REDUCE_FN, accumulate_registers, checked_command, reduce_res_operand
from .enums import reduce_cmd


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
    record(ex, Engine.gpsimd, dst)
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
    record(ex, Engine.gpsimd, dst)
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
    if rop.name not in REDUCE_FN:
        fail(
            f"nisa.select_reduce: reduce_op must be nl.maximum, nl.minimum or nl.add, got "
            f"nl.{rop.name}"
        )
    rr = reduce_res_operand(ex, "select_reduce", reduce_res, on_true)
    record(ex, Engine.vector, dst, 2)
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
        fn, ident = REDUCE_FN[rop.name]
        accumulate_registers(
            ex, "vec_regs", dst.partitions, checked_command(reduce_cmd), v, rr, fn, ident
        )


_FP32_MIN = -3.4028234663852886e38  # range_select's default fill (AWS: FP32_MIN)


def range_select(
    dst,
    on_true_tile,
    comp_op0,
    comp_op1,
    bound0,
    bound1,
    reduce_cmd=reduce_cmd.reset_reduce,
    reduce_res=None,
    reduce_op=None,
    range_start=0,
    on_false_value=Ellipsis,
    name=None,
):
    """Keep ``on_true_tile`` where ``comp_op0(i + range_start, bound0)`` and
    ``comp_op1(i + range_start, bound1)`` hold (``i``: the free-dim index), else
    ``on_false_value`` (default FP32_MIN), with a max (or min/add) reduction into the Vector
    Engine's registers and ``reduce_res``. NeuronCore-v3 and newer."""
    ex = execution.begin("range_select")
    opc = "range_select"
    if ex.target.nc_version < 3:
        fail(f"nisa.{opc} needs NeuronCore-v3 or newer")
    cmps = []
    for role, c in (("comp_op0", comp_op0), ("comp_op1", comp_op1)):
        op = _op(c, role)
        if op.kind != CMP:
            fail(f"nisa.{opc}: {role} nl.{op.name} is not a comparison operator (nl.less, ...)")
        cmps.append(op)
    unary_operands(ex, opc, dst, on_true_tile, "on_true_tile")
    b0 = scalar_or_vector(ex, opc, "bound0", bound0, on_true_tile)
    b1 = scalar_or_vector(ex, opc, "bound1", bound1, on_true_tile)
    fill = _FP32_MIN if on_false_value is Ellipsis else on_false_value
    if not isinstance(fill, (int, float)):
        fail(f"nisa.{opc}: on_false_value must be a compile-time float, got {fill!r}")
    rop = OPS["maximum"] if reduce_op is None else _op(reduce_op, "reduce_op")
    if rop.name not in REDUCE_FN:
        fail(f"nisa.{opc}: reduce_op must be nl.maximum, nl.minimum or nl.add, got nl.{rop.name}")
    rr = reduce_res_operand(ex, opc, reduce_res, on_true_tile)
    if rr is not None and not dtypes.is_float(rr.dtype):
        fail(f"nisa.{opc}: reduce_res must be a float tile, got {dtypes.name(rr.dtype)}")
    record(ex, Engine.vector, dst)
    if ex.compute:
        P = dst.partitions
        idx = torch.arange(dst.free_size, dtype=torch.float32).reshape(1, -1) + float(range_start)
        bounds = [b if isinstance(b, torch.Tensor) else torch.tensor(b) for b in (b0, b1)]
        bounds = [b.reshape(-1, 1) if b.ndim else b for b in bounds]
        keep = (cmps[0].binary(idx, bounds[0]) != 0) & (cmps[1].binary(idx, bounds[1]) != 0)
        v = torch.where(keep, f32(on_true_tile).reshape(P, -1), torch.tensor(float(fill)))
        write(dst, v)
        fn, ident = REDUCE_FN[rop.name]
        accumulate_registers(ex, "vec_regs", P, checked_command(reduce_cmd), v, rr, fn, ident)
