"""GpSimd patterns: ``iota``, ``affine_select`` and ``select_reduce``."""

from __future__ import annotations

import math

import torch

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
from ..ops import OPS
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
    if rop.name not in REDUCE_FN:
        fail(
            f"nisa.select_reduce: reduce_op must be nl.maximum, nl.minimum or nl.add, got "
            f"nl.{rop.name}"
        )
    rr = reduce_res_operand(ex, "select_reduce", reduce_res, on_true)
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
        fn, ident = REDUCE_FN[rop.name]
        accumulate_registers(
            ex, "vec_regs", dst.partitions, checked_command(reduce_cmd), v, rr, fn, ident
        )
