"""The Scalar Engine: ``activation`` (with the accumulator registers), ``reciprocal`` and
``exponential``."""

from __future__ import annotations

import torch

from ...runtime.engines import Engine
from .. import dtypes, execution
from ..errors import fail
from ..isa_common import f32, record, scalar_or_vector, unary_operands, write
from ..ops import get as _op
from ..tensor import NkiTensor
from .accumulators import accumulate_registers, checked_command, reduce_res_operand
from .arguments import mask_of
from .enums import reduce_cmd
from .vector_alu import same_float

#: activation functions that take ``out=``
_ACT_OUT = frozenset(
    {
        torch.exp,
        torch.log,
        torch.sqrt,
        torch.tanh,
        torch.sigmoid,
        torch.rsqrt,
        torch.erf,
        torch.sin,
        torch.cos,
        torch.abs,
        torch.square,
        torch.reciprocal,
    }
)


def _in_place_ok(dst, data) -> bool:
    """dst is a plain float32 view whose storage is not data's (so writing it early cannot
    change what is still to be read)."""
    return (
        dst.__class__ is NkiTensor
        and dst.dtype is torch.float32
        and dst.storage is not data.storage
    )


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
    cmd = checked_command(reduce_cmd)
    if reduce_op is not None:
        rop = _op(reduce_op, "reduce_op")
        if rop.name not in ("add", "sum"):
            fail(f"nisa.activation: reduce_op must be nl.add, got nl.{rop.name}")
        if cmd is globals()["reduce_cmd"].idle and reduce_res is not None:
            cmd = globals()["reduce_cmd"].reset_reduce  # reduce into reduce_res (older NKI form)
    rr = reduce_res_operand(ex, "activation", reduce_res, data)
    record(ex, Engine.scalar, data)
    if ex.compute:
        if (
            mask is None
            and bi is None
            and isinstance(sc, float)
            and sc == 1.0
            and reduce_op is None
            and same_float(dst, data)
        ):
            write(dst, op.act(data.tensor.reshape(dst.shape)))
            y = None
        elif mask is None and _in_place_ok(dst, data) and op.act in _ACT_OUT:
            # fp32 dst apart from data: scale, bias and function straight into dst's memory
            # (no tile-sized temporaries: each would be a fresh allocation, i.e. page faults)
            out = dst.overwrite_view()
            x = f32(data).reshape(out.shape)
            if not (isinstance(sc, float) and sc == 1.0):
                x = torch.mul(x, sc, out=out)
            if bi is not None:
                x = torch.add(x, bi, out=out)
            y = op.act(x, out=out)
        else:
            m = mask_of(mask, dst)
            x = f32(data, m).reshape(dst.shape)
            if not (isinstance(sc, float) and sc == 1.0):
                x = x * sc
            if bi is not None:
                x = x + bi
            y = op.act(x)
            write(dst, y, m)
        accumulate_registers(
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
    record(ex, Engine.vector, data)
    if ex.compute:
        m = mask_of(mask, dst)
        write(dst, torch.reciprocal(f32(data, m)), m)


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
    rr = reduce_res_operand(ex, "exponential", reduce_res, src)
    record(ex, Engine.vector, src)
    if ex.compute:
        y = torch.exp(f32(src).reshape(dst.shape) - mv)
        write(dst, y)
        accumulate_registers(
            ex,
            "vec_regs",
            src.partitions,
            checked_command(reduce_cmd),
            y,
            rr,
            torch.add,
            0.0,
            init=float(reduce_init) if isinstance(reduce_init, (int, float)) else None,
        )
