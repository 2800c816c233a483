"""Vector Engine scans: ``tensor_tensor_scan`` (the recurrence behind Mamba-style selective
scans) and ``tensor_scalar_cumulative`` (cumulative sums/products/max/min with the engine's
accumulator registers).

Each partition runs a sequential recurrence along its free elements on the engine. The
simulator keeps to whole-tile torch ops: a recurrence whose step is an affine map of the
previous value (``add``, ``subtract``, ``multiply``) is a composition of affine maps, which is
associative, so it is computed by recursive doubling in ``ceil(log2 N)`` whole-tile steps;
``maximum``/``minimum`` chains are ``cummax``/``cummin``. Only an operator pair with no
associative form (e.g. ``divide`` of the previous value) falls back to one whole-partition torch
op per free element, which is the instruction's definition.
"""

from __future__ import annotations

import torch

from ...runtime.engines import Engine
from .. import dtypes, execution
from ..errors import fail
from ..isa_common import (
    ON_CHIP,
    PSUM,
    f32,
    operand,
    record,
    same_free,
    same_partitions,
    scalar_or_vector,
    write,
)
from ..ops import ARITH
from ..ops import get as _op
from .accumulators import _regs, checked_command
from .enums import reduce_cmd

_AFFINE = ("add", "subtract", "multiply")
_MAX = ("maximum", "max")
_MIN = ("minimum", "min")


def affine_scan(a: torch.Tensor, b: torch.Tensor, x0: torch.Tensor) -> torch.Tensor:
    """``r[:, i] = a[:, i] * r[:, i-1] + b[:, i]`` with ``r[:, -1] = x0`` for (P, N) tiles:
    Hillis-Steele doubling over the composed affine maps (log2 N whole-tile steps)."""
    n = a.shape[1]
    k = 1
    while k < n:
        b = torch.cat((b[:, :k], torch.addcmul(b[:, k:], a[:, k:], b[:, :-k])), dim=1)
        a = torch.cat((a[:, :k], a[:, k:] * a[:, :-k]), dim=1)
        k *= 2
    return torch.addcmul(b, a, x0.expand_as(a))


def _step_affine(name, reverse, x_coef, const):
    """The step ``op(const, prev)`` (or ``op(prev, const)`` when reversed) as ``(a, b)`` with
    ``a * prev + b``; ``x_coef``/``const`` describe the operand that is not ``prev``."""
    if name == "add":
        return x_coef, const
    if name == "multiply":
        return x_coef * const, torch.zeros_like(const)
    # subtract: const - prev, or prev - const when reversed
    return (x_coef, -const) if reverse else (-x_coef, const)


def _scan_ops(opcode, op0, op1):
    for role, op in (("op0", op0), ("op1", op1)):
        if op.kind != ARITH or op.binary is None:
            fail(
                f"nisa.{opcode}: {role} nl.{op.name} must be a binary arithmetic operator "
                f"(nl.add, nl.multiply, nl.maximum, ...)"
            )


def tensor_tensor_scan(
    dst, data0, data1, initial, op0, op1, reverse0=False, reverse1=False, name=None
):
    """Per partition: ``r[i] = op1(op0(data0[i], r[i-1]), data1[i])`` with ``r[-1] = initial``
    (Vector Engine); ``reverse0``/``reverse1`` swap each operator's operands."""
    ex = execution.begin("tensor_tensor_scan")
    opc = "tensor_tensor_scan"
    op0, op1 = _op(op0, "op0"), _op(op1, "op1")
    _scan_ops(opc, op0, op1)
    operand(ex, opc, "data0", data0, ON_CHIP)
    operand(ex, opc, "data1", data1, ON_CHIP)
    if data0.buffer is PSUM and data1.buffer is PSUM:
        fail(f"nisa.{opc}: data0 and data1 cannot both be in PSUM (at most one PSUM input)")
    operand(ex, opc, "dst", dst, ON_CHIP, write=True)
    for role, x in (("data0", data0), ("data1", data1)):
        same_partitions(opc, "dst", dst, role, x)
        same_free(opc, "dst", dst, role, x)
    init = scalar_or_vector(ex, opc, "initial", initial, data0)
    record(ex, Engine.vector, dst, 2)
    if not ex.compute:
        return
    P = dst.partitions
    d0 = f32(data0).reshape(P, -1)
    d1 = f32(data1).reshape(P, -1)
    x0 = (init if isinstance(init, torch.Tensor) else torch.tensor(init)).reshape(-1, 1)
    x0 = x0.expand(P, 1).float()
    n0, n1 = op0.name, op1.name
    if n0 in _AFFINE and n1 in _AFFINE:
        one = torch.ones_like(d0)
        a, b = _step_affine(n0, reverse0, one, d0)  # op0(data0, prev)
        if n1 == "add":
            b = b + d1
        elif n1 == "multiply":
            a, b = a * d1, b * d1
        elif reverse1:  # data1 - (a prev + b)
            a, b = -a, d1 - b
        else:
            b = b - d1
        r = affine_scan(a, b, x0)
    elif {n0, n1} <= set(_MAX) or {n0, n1} <= set(_MIN):
        big = n0 in _MAX
        v = torch.maximum(d0, d1) if big else torch.minimum(d0, d1)
        v = torch.cat((x0, v), dim=1)
        r = (v.cummax(dim=1) if big else v.cummin(dim=1)).values[:, 1:]
    else:  # no associative form: the definition, one whole-partition op per free element
        cols, prev = [], x0
        for i in range(d0.shape[1]):
            a0 = (prev, d0[:, i : i + 1]) if reverse0 else (d0[:, i : i + 1], prev)
            t = op0.binary(*a0)
            prev = op1.binary(d1[:, i : i + 1], t) if reverse1 else op1.binary(t, d1[:, i : i + 1])
            cols.append(prev)
        r = torch.cat(cols, dim=1)
    write(dst, r)


_CUM_INIT = {"add": 0.0, "subtract": 0.0, "multiply": 1.0, "maximum": -float("inf")}
_CUM_INIT.update({"max": -float("inf"), "minimum": float("inf"), "min": float("inf")})
_CUM_DTYPES = (
    torch.bfloat16,
    torch.float16,
    torch.float32,
    torch.uint8,
    torch.uint16,
    torch.int8,
    torch.int16,
    torch.float8_e4m3fn,
    torch.float8_e5m2,
)


def tensor_scalar_cumulative(
    dst, src, op0, op1, imm0, imm1=None, reduce_cmd=reduce_cmd.idle, reverse0=False, name=None
):
    """Per partition: ``reg = op1(op0(src[i], imm0), reg); dst[i] = reg`` (Vector Engine),
    with the accumulator register set by ``reduce_cmd`` (reset, load ``imm1``, or continue)."""
    ex = execution.begin("tensor_scalar_cumulative")
    opc = "tensor_scalar_cumulative"
    op0, op1 = _op(op0, "op0"), _op(op1, "op1")
    if op0.kind != ARITH or op0.binary is None:
        fail(f"nisa.{opc}: op0 nl.{op0.name} must be a binary arithmetic operator")
    if op1.name not in _CUM_INIT:
        fail(
            f"nisa.{opc}: op1 must be nl.add, nl.subtract, nl.multiply, nl.maximum or "
            f"nl.minimum (the accumulating operators), got nl.{op1.name}"
        )
    operand(ex, opc, "src", src, ON_CHIP)
    operand(ex, opc, "dst", dst, ON_CHIP, write=True)
    same_partitions(opc, "dst", dst, "src", src)
    same_free(opc, "dst", dst, "src", src)
    for role, x in (("src", src), ("dst", dst)):
        if dtypes.storage_dtype(x.dtype) not in _CUM_DTYPES:
            fail(
                f"nisa.{opc}: {role} is {dtypes.name(x.dtype)}; the instruction supports "
                f"bfloat16, float16, float32, fp8, uint8, uint16, int8 and int16 (not 32-bit "
                f"integers)"
            )
    v0 = scalar_or_vector(ex, opc, "imm0", imm0, src)
    cmd = checked_command(reduce_cmd)
    R = globals()["reduce_cmd"]
    if cmd is R.load_reduce and imm1 is None:
        fail(f"nisa.{opc}: reduce_cmd=load_reduce loads the accumulator from imm1; pass imm1")
    v1 = None if imm1 is None else scalar_or_vector(ex, opc, "imm1", imm1, src)
    record(ex, Engine.vector, dst)
    if not ex.compute:
        return
    P = dst.partitions
    x = f32(src).reshape(P, -1)
    c0 = v0 if isinstance(v0, torch.Tensor) else torch.tensor(v0)
    c0 = c0.reshape(-1, 1) if c0.ndim else c0
    v = op0.binary(c0, x) if reverse0 else op0.binary(x, c0)
    v = v.expand(P, x.shape[1]).float()
    regs = _regs(ex, "vec_regs", P)
    if cmd in (R.reset, R.reset_reduce):
        reg = torch.full((P, 1), _CUM_INIT[op1.name])
    elif cmd is R.load_reduce:
        reg = (v1 if isinstance(v1, torch.Tensor) else torch.tensor(v1)).reshape(-1, 1)
        reg = reg.expand(P, 1).float()
    else:  # reduce / idle: continue from the registers as they are
        reg = regs.reshape(P, 1)
    n1 = op1.name
    if n1 in _AFFINE:
        # reg' = op1(v, reg): add -> reg + v, subtract -> v - reg, multiply -> v * reg
        a, b = _step_affine(n1, False, torch.ones_like(v), v)
        r = affine_scan(a, b, reg)
    else:
        big = n1 in _MAX
        w = torch.cat((reg, v), dim=1)
        r = (w.cummax(dim=1) if big else w.cummin(dim=1)).values[:, 1:]
    ex.vec_regs = r[:, -1].clone()
    write(dst, r)
