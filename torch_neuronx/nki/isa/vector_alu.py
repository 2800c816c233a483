"""The Vector / GpSimd ALU: element-wise tensor-tensor and tensor-scalar instructions and
the free-axis and partition reductions."""

from __future__ import annotations

import math

import torch

from ...runtime.engines import Engine
from .. import execution
from ..errors import fail
from ..isa_common import (
    ON_CHIP,
    PSUM,
    SBUF_ONLY,
    f32,
    operand,
    record,
    require_int,
    same_free,
    same_partitions,
    scalar_or_vector,
    unary_operands,
    write,
    write_into,
)
from ..ops import ARITH, BITVEC
from ..ops import get as _op
from ..tensor import NkiTensor
from .accumulators import REDUCE_FN, accumulate_registers, checked_command, reduce_res_operand
from .arguments import engine_name, mask_of
from .enums import engine, reduce_cmd


def _alu_engine(engine_arg, op, tiles, default=Engine.vector):
    eng = engine_name(engine_arg, op.engine or default)
    if op.engine == Engine.gpsimd and eng != Engine.gpsimd:
        eng = Engine.gpsimd
    if eng == Engine.gpsimd and any(x.buffer is PSUM for x in tiles if hasattr(x, "buffer")):
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
        Engine.gpsimd
        if ints and PSUM not in (data1.buffer, data2.buffer, dst.buffer)
        else Engine.vector,
    )
    record(ex, eng, dst, 2)
    if ex.compute:
        if mask is None and same_float(dst, data1, data2) and op.kind == ARITH:
            # torch computes 16-bit float ops in float32 and rounds once: the engine's result
            if not write_into(dst, op.binary, data1, data2):
                write(
                    dst, op.binary(data1.tensor.reshape(dst.shape), data2.tensor.reshape(dst.shape))
                )
            return
        m = mask_of(mask, dst)
        if op.kind == BITVEC or ints:
            a, b = data1.read(m).to(torch.int64), data2.read(m).to(torch.int64)
        else:
            a, b = f32(data1, m), f32(data2, m)
        write(dst, op.binary(a.reshape(dst.shape), b.reshape(dst.shape)), m)


_FAST = (torch.float32, torch.bfloat16, torch.float16)


def same_float(dst, *xs) -> bool:
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


def _into_dst(dst, data, op, v, reverse) -> bool:
    """fp32 ``dst = data <op> v`` computed into dst's memory (see ``write_into``)."""
    if op.binary is None:
        return False
    if not isinstance(v, torch.Tensor) and (
        reverse or op.binary not in (torch.add, torch.sub, torch.mul, torch.div, torch.pow)
    ):
        return False  # torch takes a Python number only as the second operand of these
    args = (v, data) if reverse else (data, v)
    return write_into(dst, op.binary, *args)


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
    eng = engine_name(engine, Engine.vector)
    if eng == Engine.scalar:
        pair = (op0.name, op1.name if op1 else None)
        if pair not in (("multiply", "add"), ("multiply", None), ("add", None)):
            fail(
                f"nisa.tensor_scalar on the Scalar Engine supports only (multiply, add), "
                f"(multiply, None) and (add, None); got {pair}"
            )
    if eng == Engine.gpsimd and op0.name != "rsqrt":
        fail("nisa.tensor_scalar runs on the GpSimd Engine only for nl.rsqrt")
    if eng == Engine.gpsimd and PSUM in (dst.buffer, data.buffer):
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
            and same_float(dst, data)
        ):
            write(dst, _apply_scalar(op0, data.tensor.reshape(dst.shape), v0, reverse0))
            return
        if (
            mask is None
            and not bit
            and dst.dtype is torch.float32
            and data.dtype is torch.float32
            and _into_dst(dst, data, op0, v0, reverse0)
        ):
            if op1 is not None and not _into_dst(dst, dst, op1, v1, reverse1):
                write(dst, _apply_scalar(op1, dst.tensor, v1, reverse1))
            return
        m = mask_of(mask, dst)
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
    record(ex, Engine.vector, dst, 2)
    if ex.compute:
        m = mask_of(mask, dst)
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
    record(ex, Engine.vector, data)
    if ex.compute:
        m = mask_of(mask, data)
        x = data.read(m).to(torch.int64) if op.kind == BITVEC else f32(data, m)
        if m is not None:
            # masked-off elements take no part: they become the reduction's identity, and a
            # dst element none of whose inputs is active is left as it was
            x = torch.where(m, x, torch.tensor(_identity(op), dtype=x.dtype))
        r = op.reduce(x, axes)
        if negate:
            r = -r
        live = None if m is None else m.flatten(axes[0]).any(dim=-1).reshape(dst.shape)
        write(dst, r, live)


def _identity(op):
    if op.identity is not None:
        return op.identity
    return -1 if op.name == "bitwise_and" else 0  # bitwise or / xor


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
    record(ex, Engine.gpsimd, data)
    if ex.compute:
        bit = op.kind == BITVEC
        x = data.read().to(torch.int64) if bit else f32(data)
        x = x.reshape(data.partitions, -1)
        r = op.reduce(x, (0,)).reshape(1, -1)
        write(dst, r.expand(dst.partitions, -1) if dst.partitions > 1 else r)


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
    if rop.name not in REDUCE_FN:
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
    rr = reduce_res_operand(ex, "tensor_scalar_reduce", reduce_res, data)
    record(ex, Engine.vector, data)
    if ex.compute:
        r = _apply_scalar(op0, f32(data).reshape(dst.shape), v0, reverse0)
        write(dst, r)
        fn, ident = REDUCE_FN[rop.name]
        accumulate_registers(
            ex,
            "vec_regs",
            data.partitions,
            checked_command(reduce_cmd),
            r,
            rr,
            fn,
            ident,
            init=float(reduce_init) if isinstance(reduce_init, (int, float)) else None,
            negate=reduce_res_negate,
        )
