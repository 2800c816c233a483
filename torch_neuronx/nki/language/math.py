"""Element-wise math, activation functions and reductions of ``nki.language``.

Each call allocates its result tile in SBUF and issues the ISA instruction(s) a compiler
would: ``tensor_tensor`` for two tiles, ``tensor_scalar`` for a tile and a scalar or a
per-partition column, ``activation`` for activation functions, ``tensor_reduce`` for
reductions. Broadcasting follows numpy along the free dims; broadcasting along the partition
dim is a physical copy and needs ``nl.broadcast_to``.
"""

from __future__ import annotations

import math
import numbers

import torch

from .. import dtypes, execution, isa
from ..alloc import ndarray as _alloc
from ..dynamic import DynamicTensor
from ..errors import fail
from ..indexed import IndexedTensor
from ..indexing import mask_tensor
from ..ops import ARITH, BITVEC, CMP, LOGICAL, OPS
from ..storage import MemoryRegion
from ..tensor import NkiTensor
from ..tensor_base import register_language

sbuf = MemoryRegion.sbuf


def _tile(x) -> bool:
    return isinstance(x, (NkiTensor, IndexedTensor, DynamicTensor))


def _num(x) -> bool:
    # Python and NumPy scalars (``np.int32(64)``, a size computed with NumPy)
    return isinstance(x, numbers.Real)


def _result_dtype(op, a, b, dtype):
    if dtype is not None:
        return dtypes.normalize(dtype)
    if _tile(a) and _tile(b):
        da, db = dtypes.storage_dtype(a.dtype), dtypes.storage_dtype(b.dtype)
        return da if da == db else torch.promote_types(da, db)
    t = a if _tile(a) else b
    return t.dtype


def _fp32_column(x):
    """A (P, 1) operand as float32 (tensor_scalar reads scalar operands as fp32)."""
    if dtypes.normalize(x.dtype) is torch.float32:
        return x
    out = _alloc(x.shape, dtypes.float32, sbuf)
    isa.tensor_copy(dst=out, src=x)
    return out


def _on_chip(x, fn):
    if x.buffer.is_hbm:
        fail(f"nl.{fn}: operands must be on-chip tiles (SBUF/PSUM); load HBM tensors with nl.load")
    return x


def _binary(op, x, y, dtype=None, mask=None, **kwargs):
    name = op.name
    if not _tile(x) and not _tile(y):
        if op.binary is None:
            fail(f"nl.{name} is not a binary operation")
        return float(op.binary(torch.tensor(float(x)), torch.tensor(float(y))))
    out_dtype = _result_dtype(op, x, y, dtype)
    if _tile(x) and _tile(y):
        _on_chip(x, name), _on_chip(y, name)
        if x.partitions != y.partitions and 1 in (x.partitions, y.partitions):
            fail(
                f"nl.{name}: shapes {x.shape} and {y.shape} broadcast along the partition dim, "
                f"which needs a cross-partition copy: use nl.broadcast_to(t, shape) first"
            )
        if tuple(x.shape) == tuple(y.shape):
            out = _alloc(x.shape, out_dtype, sbuf)
            isa.tensor_tensor(dst=out, data1=x, data2=y, op=op, mask=mask)
            return out
        for col, other, rev in ((y, x, False), (x, y, True)):
            if (
                col.free_size == 1
                and other.free_size > 1
                and op.binary is not None
                and op.kind != BITVEC
            ):
                out = _alloc(other.shape, out_dtype, sbuf)
                isa.tensor_scalar(
                    dst=out, data=other, op0=op, operand0=_fp32_column(col), reverse0=rev, mask=mask
                )
                return out
        try:
            shape = tuple(torch.broadcast_shapes(tuple(x.shape), tuple(y.shape)))
        except RuntimeError:
            fail(f"nl.{name}: shapes {x.shape} and {y.shape} do not broadcast")
        if len(x.shape) != len(y.shape):
            fail(f"nl.{name}: tiles of different rank ({x.shape}, {y.shape}); reshape first")
        xs, ys = x, y
        for d in range(1, len(shape)):
            if xs.shape[d] != shape[d]:
                xs = xs.broadcast(d, shape[d])
            if ys.shape[d] != shape[d]:
                ys = ys.broadcast(d, shape[d])
        out = _alloc(shape, out_dtype, sbuf)
        isa.tensor_tensor(dst=out, data1=xs, data2=ys, op=op, mask=mask)
        return out
    tile, scalar, rev = (x, y, False) if _tile(x) else (y, x, True)
    _on_chip(tile, name)
    if not _num(scalar):
        fail(f"nl.{name}: operand {scalar!r} is neither a tile nor a number")
    if not isinstance(scalar, (int, float)):
        scalar = scalar.item()  # a NumPy scalar
    out = _alloc(tile.shape, out_dtype, sbuf)
    isa.tensor_scalar(dst=out, data=tile, op0=op, operand0=scalar, reverse0=rev, mask=mask)
    return out


def _unary(op, x, dtype=None, mask=None, **kwargs):
    if not _tile(x):
        v = torch.tensor(float(x))
        f = op.act or op.unary
        return float(f(v))
    _on_chip(x, op.name)
    out = _alloc(x.shape, dtype or x.dtype, sbuf)
    if op.act is not None:
        isa.activation(dst=out, op=op, data=x, mask=mask)
    else:
        isa.tensor_scalar(dst=out, data=x, op0=op, operand0=None, mask=mask)
    return out


def _reduce_shape(x, axes, keepdims):
    if keepdims:
        return tuple(1 if d in axes else s for d, s in enumerate(x.shape))
    shape = tuple(s for d, s in enumerate(x.shape) if d not in axes)
    return shape if len(shape) >= 2 else shape + (1,) * (2 - len(shape))


def _axes(x, axis):
    if isinstance(axis, int):
        axis = (axis,)
    return tuple(sorted(int(a) + (x.ndim if int(a) < 0 else 0) for a in axis))


def _reduction(opname, x, axis, dtype=None, keepdims=False, mask=None, **kwargs):
    _on_chip(x, opname)
    axes = _axes(x, axis)
    out = _alloc(_reduce_shape(x, axes, keepdims), dtype or x.dtype, sbuf)
    isa.tensor_reduce(dst=out, op=OPS[opname], data=x, axis=axes, keepdims=keepdims, mask=mask)
    return out


def sum(x, axis, dtype=None, keepdims=False, mask=None):  # noqa: A001 - NKI's name
    return _reduction("add", x, axis, dtype, keepdims, mask)


def max(x, axis, dtype=None, keepdims=False, mask=None):  # noqa: A001
    return _reduction("maximum", x, axis, dtype, keepdims, mask)


def min(x, axis, dtype=None, keepdims=False, mask=None):  # noqa: A001
    return _reduction("minimum", x, axis, dtype, keepdims, mask)


def prod(x, axis, dtype=None, keepdims=False, mask=None):
    return _reduction("multiply", x, axis, dtype, keepdims, mask)


def all(x, axis, dtype=None, mask=None):  # noqa: A001
    return _reduction("logical_and", x, axis, dtype, False, mask)


def mean(x, axis, dtype=None, keepdims=False, mask=None):
    """Sum then scale by 1/n (two instructions; float32 intermediate). With ``mask=`` it is
    the mean of the active elements, consistent with the masked ``nl.sum``: n counts only
    active inputs, and a result with no active input is left unwritten like the sum's."""
    axes = _axes(x, axis)
    s = _reduction("add", x, axes, dtypes.float32, keepdims, mask)
    out = _alloc(s.shape, dtype or x.dtype, sbuf)
    m = mask_tensor(mask, x.shape)
    if m is None:
        n = math.prod(x.shape[a] for a in axes)
        isa.tensor_scalar(dst=out, data=s, op0=OPS["multiply"], operand0=1.0 / n)
        return out
    # masks are compile-time (nl.arange predicates): so is each result's count of active inputs
    count = m.sum(dim=axes, keepdim=keepdims).reshape(s.shape).float()
    active = count > 0
    counts = count[active].unique()
    if len(counts) <= 1:  # the usual free-axis mask: one count, an immediate operand
        n = float(counts[0]) if len(counts) else 1.0
        isa.tensor_scalar(dst=out, data=s, op0=OPS["multiply"], operand0=1.0 / n, mask=active)
        return out
    # counts that differ per result: a constant tile of 1/count, which the compiler
    # materialises (counted as one memset), then one multiply of the active results
    r = _alloc(s.shape, dtypes.float32, sbuf)
    isa.memset(dst=r, value=0.0)
    if execution.current().compute:
        r.write(torch.where(active, 1.0 / count.clamp(min=1), 0.0))
    isa.tensor_tensor(dst=out, data1=s, data2=r, op=OPS["multiply"], mask=active)
    return out


def var(x, axis, dtype=None, keepdims=False, mask=None):
    """Population variance along free ``axis`` (mean, centred square, mean); with ``mask=``
    over the active elements only."""
    axes = _axes(x, axis)
    m = mean(x, axes, dtypes.float32, keepdims=True, mask=mask)
    if m.free_size != 1:
        fail("nl.var supports reducing all trailing free dims to one value per partition")
    d = _alloc(x.shape, dtypes.float32, sbuf)
    isa.tensor_scalar(dst=d, data=x, op0=OPS["subtract"], operand0=m)
    sq = _alloc(x.shape, dtypes.float32, sbuf)
    isa.activation(dst=sq, op=OPS["square"], data=d)
    return mean(sq, axes, dtype or x.dtype, keepdims=True, mask=mask)


def _activation_with_sum(op, x, bias=None):
    """float32 ``op(x + bias)`` and its per-partition sum, one Scalar Engine instruction (the
    sum accumulates in the engine's reduce registers): returns (values, (P, 1) sums)."""
    y = _alloc(x.shape, dtypes.float32, sbuf)
    total = _alloc((x.partitions, 1), dtypes.float32, sbuf)
    isa.activation(
        dst=y,
        op=op,
        data=x,
        bias=bias,
        reduce_op=OPS["add"],
        reduce_res=total,
        reduce_cmd=isa.reduce_cmd.reset_reduce,
    )
    return y, total


def softmax(x, axis=-1, dtype=None, mask=None):
    """Numerically stable softmax along the free ``axis``: max, exp(x - max) with a fused
    sum, reciprocal, scale (5 instructions)."""
    _on_chip(x, "softmax")
    axes = _axes(x, axis)
    if axes != tuple(range(1, x.ndim)):
        fail("nl.softmax reduces all free dims of the tile; reshape to (P, F) first")
    mx = _alloc((x.partitions, 1), dtypes.float32, sbuf)
    isa.tensor_reduce(dst=mx, op=OPS["maximum"], data=x, axis=axes, negate=True)
    e, s = _activation_with_sum(OPS["exp"], x, bias=mx)
    r = _alloc((x.partitions, 1), dtypes.float32, sbuf)
    isa.reciprocal(dst=r, data=s)
    out = _alloc(x.shape, dtype or x.dtype, sbuf)
    isa.tensor_scalar(dst=out, data=e, op0=OPS["multiply"], operand0=r)
    return out


def rms_norm(x, w, axis, n, epsilon=1e-6, dtype=None, compute_dtype=None):
    """``x / sqrt(mean(x^2) + epsilon) * w`` along the free ``axis``."""
    _on_chip(x, "rms_norm")
    _, total = _activation_with_sum(OPS["square"], x)
    ms = _alloc((x.partitions, 1), dtypes.float32, sbuf)
    isa.tensor_scalar(
        dst=ms,
        data=total,
        op0=OPS["multiply"],
        operand0=1.0 / int(n),
        op1=OPS["add"],
        operand1=float(epsilon),
    )
    r = _alloc((x.partitions, 1), dtypes.float32, sbuf)
    isa.activation(dst=r, op=OPS["rsqrt"], data=ms)
    y = _alloc(x.shape, compute_dtype or dtypes.float32, sbuf)
    isa.tensor_scalar(dst=y, data=x, op0=OPS["multiply"], operand0=r)
    return _binary(OPS["multiply"], y, w, dtype=dtype or x.dtype)


def where(condition, x, y, dtype=None, mask=None):
    """``condition ? x : y`` element-wise (condition: 1.0 / 0.0 tile)."""
    _on_chip(condition, "where")
    ref = x if _tile(x) else (y if _tile(y) else condition)
    out = _alloc(condition.shape, dtype or ref.dtype, sbuf)
    if _tile(y):
        isa.tensor_copy(dst=out, src=y)
    else:
        isa.memset(dst=out, value=float(y))
    pred = _alloc(condition.shape, dtypes.uint8, sbuf)
    isa.tensor_copy(dst=pred, src=condition)
    src = x
    if _tile(x) and dtypes.normalize(x.dtype) != dtypes.normalize(out.dtype):
        src = _alloc(x.shape, out.dtype, sbuf)
        isa.tensor_copy(dst=src, src=x)
    isa.tensor_copy_predicated(dst=out, src=src if _tile(src) else float(src), predicate=pred)
    return out


def dropout(x, rate, dtype=None, mask=None):
    """Zero each element of ``x`` with probability ``rate`` (``nisa.dropout``; no rescaling)."""
    _on_chip(x, "dropout")
    if mask is not None:
        fail("nl.dropout: mask= is not supported (nisa.dropout has no predicate); slice x instead")
    out = _alloc(x.shape, x.dtype, sbuf)
    isa.dropout(dst=out, data=x, prob=rate)
    if dtype is None or dtypes.normalize(dtype) == dtypes.normalize(x.dtype):
        return out
    cast = _alloc(x.shape, dtype, sbuf)
    isa.tensor_copy(dst=cast, src=out)
    return cast


def gather_flattened(data, indices, axis=0, dtype=None, mask=None):
    """``out[p, ...] = data[p].flatten()[indices[p, ...]]``: one ``nisa.nc_n_gather`` (its
    rules: SBUF tiles, uint32 indices, in-range indices); the result has the shape of
    ``indices``. ``axis`` must be 0, the only value AWS's page shows: the gather is always
    within each partition over the flattened free dims."""
    _on_chip(data, "gather_flattened")
    if mask is not None:
        fail("nl.gather_flattened: mask= is not supported; slice the tiles instead")
    if axis != 0:
        fail(
            f"nl.gather_flattened: axis={axis!r}; only axis=0 is defined (each partition "
            f"gathers from its own flattened free dims)"
        )
    out = _alloc(indices.shape, data.dtype, sbuf)
    isa.nc_n_gather(dst=out, data=data, indices=indices)
    if dtype is None or dtypes.normalize(dtype) == dtypes.normalize(data.dtype):
        return out
    cast = _alloc(indices.shape, dtype, sbuf)
    isa.tensor_copy(dst=cast, src=out)
    return cast


def prelu(x, alpha=0.0, dtype=None, mask=None):
    """``x`` where ``x >= 0`` else ``alpha * x`` (``alpha``: a float or a ``(P, 1)`` tile):
    one nisa.activate2, so NeuronCore-v4 only, as on AWS."""
    if mask is not None:
        fail("nl.prelu: mask= is not supported (nisa.activate2 has no predicate); slice x instead")
    _on_chip(x, "prelu")
    out = _alloc(x.shape, dtype or x.dtype, sbuf)
    bypass = OPS["bypass"]
    isa.activate2(
        dst=out,
        op=OPS["prelu"],
        data=x,
        imm0=None,
        imm1=None,
        op0=bypass,
        op1=bypass,
        relu_param=alpha,
    )
    return out


def _attach():
    """Give each operator constant its language function (nl.add(x, y), nl.exp(x), ...)."""
    for name, op in OPS.items():
        if (
            op.binary is not None
            and op.kind in (ARITH, BITVEC, CMP, LOGICAL)
            and name not in ("max", "min")
        ):
            op.lang = (
                lambda o: lambda x, y, dtype=None, mask=None, **kw: _binary(o, x, y, dtype, mask)
            )(op)
        elif op.act is not None or op.unary is not None:
            op.lang = (lambda o: lambda x, dtype=None, mask=None, **kw: _unary(o, x, dtype, mask))(
                op
            )
    OPS["max"].lang = max
    OPS["min"].lang = min
    OPS["sum"].lang = sum
    OPS["mean"].lang = mean
    OPS["prod"].lang = prod
    OPS["var"].lang = var
    OPS["all"].lang = all
    OPS["prelu"].lang = prelu
    from .memory import copy

    OPS["copy"].lang = copy


_attach()


def _language_fn(name):
    return OPS[name]


# the operator objects under their language names (nl.add(x, y) and op=nl.add)
add = OPS["add"]
subtract = OPS["subtract"]
multiply = OPS["multiply"]
divide = OPS["divide"]
maximum = OPS["maximum"]
minimum = OPS["minimum"]
power = OPS["power"]
abs = OPS["abs"]  # noqa: A001
negative = OPS["negative"]
abs_max = OPS["abs_max"]
abs_min = OPS["abs_min"]
_ = IndexedTensor

# the Python operators on NKI tensors (a + b is nl.add(a, b))
register_language(
    add=add,
    subtract=subtract,
    multiply=multiply,
    divide=divide,
    power=power,
    negative=negative,
    abs=abs,
)
