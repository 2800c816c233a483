"""The engines' accumulator registers: ``reduce_cmd`` handling and ``reduce_res`` outputs
shared by the activation, tensor-scalar-reduce and select-reduce instructions."""

from __future__ import annotations

import math

import torch

from ..errors import fail
from ..isa_common import ON_CHIP, operand, write
from .enums import reduce_cmd


def _regs(ex, attr, P):
    r = getattr(ex, attr)
    if r is None or r.shape[0] != P:
        r = torch.zeros(P, dtype=torch.float32, device="meta" if ex.abstract else "cpu")
        setattr(ex, attr, r)
    return r


def reduce_res_operand(ex, opcode, reduce_res, data):
    if reduce_res is None:
        return None
    operand(ex, opcode, "reduce_res", reduce_res, ON_CHIP, write=True)
    if reduce_res.partitions != data.partitions or reduce_res.free_size != 1:
        fail(
            f"nisa.{opcode}: reduce_res must have shape ({data.partitions}, 1), got "
            f"{reduce_res.shape}"
        )
    return reduce_res


def checked_command(v):
    if isinstance(v, reduce_cmd):
        return v
    fail(f"reduce_cmd={v!r} is not an nki.isa.reduce_cmd value")


def accumulate_registers(
    ex, attr, P, cmd, values, reduce_res, fn, identity, init=None, negate=False
):
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


REDUCE_FN = {
    "add": (torch.add, 0.0),
    "sum": (torch.add, 0.0),
    "multiply": (torch.mul, 1.0),
    "maximum": (torch.maximum, -math.inf),
    "max": (torch.maximum, -math.inf),
    "minimum": (torch.minimum, math.inf),
    "min": (torch.minimum, math.inf),
}
