"""``activate2`` (NeuronCore-v4): ``op((data <op0> imm0) <op1> imm1)`` with a configurable
fused reduction into the Scalar Engine's reduce registers, and the parametric activation
``nl.prelu`` (slope ``relu_param``), which only this instruction offers.

AWS page: https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/nki/api/generated/nki.isa.activate2.html
"""

from __future__ import annotations

import torch

from ...runtime.engines import Engine
from .. import execution
from ..errors import fail
from ..isa_common import PSUM, f32, record, scalar_or_vector, unary_operands, write
from ..ops import get as _op
from .accumulators import REDUCE_FN, accumulate_registers, checked_command, reduce_res_operand
from .arguments import engine_name
from .enums import reduce_cmd

# the six (op0, op1) pairs the tensor-scalar stage implements (AWS's list)
_PAIRS = {
    ("multiply", "add"),
    ("multiply", "subtract"),
    ("multiply", "bypass"),
    ("add", "bypass"),
    ("subtract", "bypass"),
    ("bypass", "bypass"),
}
_STAGE = {"multiply": torch.mul, "add": torch.add, "subtract": torch.sub}


def _stage(x, name, imm, reverse):
    if name == "bypass":
        return x
    fn = _STAGE[name]
    return fn(imm, x) if reverse else fn(x, imm)


def activate2(
    dst,
    op,
    data,
    imm0,
    imm1,
    op0,
    op1,
    relu_param=0.0,
    reverse0=False,
    reverse1=False,
    reduce_op=None,
    reduce_res=None,
    reduce_cmd=reduce_cmd.idle,
    engine=None,
    name=None,
):
    """``dst = op((data <op0> imm0) <op1> imm1)`` in float32 on the Scalar Engine (or the
    GpSimd Engine, without the reduction), optionally reduced along the free axis with
    ``reduce_op`` (add, max or min) into the reduce registers, read out into ``reduce_res``."""
    ex = execution.begin("activate2")
    opc = "activate2"
    if ex.target.nc_version < 4:
        fail(
            f"nisa.activate2 is available only on NeuronCore-v4 (Trn3); this instance is "
            f"{ex.target.label}. Use nisa.activation (scale, bias) instead"
        )
    act = _op(op)
    if act.act is None and act.name != "prelu":
        fail(f"nisa.{opc}: nl.{act.name} is not a Scalar Engine activation function")
    o0, o1 = _op(op0, "op0").name, _op(op1, "op1").name
    if (o0, o1) not in _PAIRS:
        fail(
            f"nisa.{opc}: (op0, op1) = (nl.{o0}, nl.{o1}) is not supported; the pairs are "
            f"(multiply, add), (multiply, subtract), (multiply, bypass), (add, bypass), "
            f"(subtract, bypass), (bypass, bypass)"
        )
    eng = engine_name(engine, Engine.scalar)
    if eng not in (Engine.scalar, Engine.gpsimd):
        fail(f"nisa.{opc} runs on the Scalar or GpSimd Engine, not engine={eng}")
    if eng == Engine.gpsimd and any(t.buffer is PSUM for t in (dst, data)):
        fail(f"nisa.{opc} on the GpSimd Engine cannot access PSUM")
    unary_operands(ex, opc, dst, data)
    i0 = scalar_or_vector(ex, opc, "imm0", imm0, data, allow_none=o0 == "bypass")
    i1 = scalar_or_vector(ex, opc, "imm1", imm1, data, allow_none=o1 == "bypass")
    alpha = scalar_or_vector(ex, opc, "relu_param", relu_param, data)
    cmd = checked_command(reduce_cmd)
    rfn = None
    if reduce_op is not None:
        rop = _op(reduce_op, "reduce_op")
        if rop.name not in ("add", "maximum", "minimum", "max", "min"):
            fail(f"nisa.{opc}: reduce_op must be nl.add, nl.maximum or nl.minimum, got {rop.name}")
        if eng != Engine.scalar:
            fail(f"nisa.{opc}: the fused reduction runs on the Scalar Engine only")
        rfn, ident = REDUCE_FN[rop.name]
        if cmd is reduce_cmd_enum.idle and reduce_res is not None:
            cmd = reduce_cmd_enum.reset_reduce
    rr = reduce_res_operand(ex, opc, reduce_res, data)
    record(ex, eng, data)
    if ex.compute:
        x = f32(data).reshape(dst.shape)
        x = _stage(_stage(x, o0, i0, reverse0), o1, i1, reverse1)
        y = torch.where(x >= 0, x, x * alpha) if act.name == "prelu" else act.act(x)
        write(dst, y)
        if rfn is not None or rr is not None:
            fn, init = (rfn, ident) if rfn is not None else (torch.add, 0.0)
            vals = y if rfn is not None else None
            accumulate_registers(ex, "act_regs", data.partitions, cmd, vals, rr, fn, init)


reduce_cmd_enum = reduce_cmd  # the parameter shadows the enum inside activate2
