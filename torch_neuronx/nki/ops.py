"""The operators of NKI: ``nl.add``, ``nl.exp``, ``nl.maximum`` ...

Each is an :class:`Op` object that plays two roles, as in NKI: passed as ``op=`` to an ISA
instruction it says what the engine computes (``binary``/``unary``/``act``/``reduce``); called
as a function it is the ``nki.language`` operation (``nl.exp(tile)``), whose implementation the
language package attaches (``Op.lang``).

Math is done in float32 on the engines (AWS: "Vector/Scalar Engine performs the math in
float32"); bitvec operators work on integer bit patterns. Activation functions are the exact
functions, not the Scalar Engine's piece-wise polynomial approximations.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from torch_neuronx.runtime.engines import Engine

ARITH, BITVEC, CMP, LOGICAL = "arith", "bitvec", "cmp", "logical"


class Op:
    __slots__ = (
        "name",
        "kind",
        "binary",
        "unary",
        "act",
        "reduce",
        "identity",
        "lang",
        "engine",
        "__doc__",
    )

    def __init__(
        self,
        name,
        kind=ARITH,
        binary=None,
        unary=None,
        act=None,
        reduce=None,
        identity=None,
        engine=None,
        doc="",
    ):
        self.name = name
        self.kind = kind
        self.binary = binary  # (a, b) -> tensor
        self.unary = unary  # a -> tensor (ALU unary: abs, square, rsqrt ...)
        self.act = act  # x -> tensor (Scalar Engine activation function)
        self.reduce = reduce  # (t, dims) -> tensor (legal reduction operator)
        self.identity = identity  # accumulator reset value of the reduction
        self.engine = engine  # engine forced by the operator (nl.power: gpsimd)
        self.lang = None
        self.__doc__ = doc or f"nki.language.{name}"

    def __call__(self, *args, **kwargs):
        if self.lang is None:
            from .errors import NkiUnsupportedError

            raise NkiUnsupportedError(
                f"nl.{self.name} is an operator constant (op=nl.{self.name}); it has no "
                f"nki.language function form"
            )
        return self.lang(*args, **kwargs)

    def __repr__(self):
        return f"nl.{self.name}"

    def __reduce__(self):  # ops pickle by name (kernels are cached by their arguments)
        return (_by_name, (self.name,))


def _by_name(name):
    return OPS[name]


def _flag(pred, a):
    """A comparison's result: 1.0 / 0.0 in the (float) computation dtype."""
    return pred.to(a.dtype if a.is_floating_point() else torch.float32)


def _rsum(t, d):
    return t.sum(dim=d)


def _rprod(t, d):
    for k in sorted(d, reverse=True):
        t = t.prod(dim=k)
    return t


def _bit(fn):
    return fn


def _gelu_dx(x):
    cdf = 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))
    pdf = torch.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
    return cdf + x * pdf


def _gelu_sig(x):
    return x * torch.sigmoid(1.702 * x)


def _gelu_sig_dx(x):
    s = torch.sigmoid(1.702 * x)
    return s + 1.702 * x * s * (1.0 - s)


def _silu_dx(x):
    s = torch.sigmoid(x)
    return s * (1.0 + x * (1.0 - s))


def _erf_dx(x):
    return (2.0 / math.sqrt(math.pi)) * torch.exp(-x * x)


def _mish(x):
    return x * torch.tanh(F.softplus(x))


OPS: dict[str, Op] = {}


def _def(*ops):
    for op in ops:
        OPS[op.name] = op


_def(
    # arithmetic binary operators (Vector / GpSimd Engine ALU)
    Op("add", binary=torch.add, reduce=_rsum, identity=0.0),
    Op("subtract", binary=torch.sub),
    Op("multiply", binary=torch.mul, reduce=_rprod, identity=1.0),
    Op("divide", binary=torch.div),
    Op("maximum", binary=torch.maximum, reduce=lambda t, d: t.amax(dim=d), identity=-math.inf),
    Op("minimum", binary=torch.minimum, reduce=lambda t, d: t.amin(dim=d), identity=math.inf),
    Op("abs_max", binary=lambda a, b: torch.maximum(a.abs(), b.abs())),
    Op("abs_min", binary=lambda a, b: torch.minimum(a.abs(), b.abs())),
    Op("power", binary=torch.pow, engine=Engine.gpsimd),
    Op("fmod", binary=torch.fmod),
    Op("mod", binary=torch.remainder),
    # comparisons: 1.0 / 0.0
    Op("equal", CMP, binary=lambda a, b: _flag(a == b, a)),
    Op("not_equal", CMP, binary=lambda a, b: _flag(a != b, a)),
    Op("greater", CMP, binary=lambda a, b: _flag(a > b, a)),
    Op("greater_equal", CMP, binary=lambda a, b: _flag(a >= b, a)),
    Op("less", CMP, binary=lambda a, b: _flag(a < b, a)),
    Op("less_equal", CMP, binary=lambda a, b: _flag(a <= b, a)),
    # logical operators on 0/non-0 values: 1.0 / 0.0
    Op(
        "logical_and",
        LOGICAL,
        binary=lambda a, b: ((a != 0) & (b != 0)).float(),
        reduce=lambda t, d: (t != 0).flatten(d[0]).all(dim=d[0]).float(),
        identity=1.0,
    ),
    Op(
        "logical_or",
        LOGICAL,
        binary=lambda a, b: ((a != 0) | (b != 0)).float(),
        reduce=lambda t, d: (t != 0).flatten(d[0]).any(dim=d[0]).float(),
        identity=0.0,
    ),
    Op("logical_xor", LOGICAL, binary=lambda a, b: ((a != 0) ^ (b != 0)).float()),
    Op("logical_not", LOGICAL, unary=lambda a: (a == 0).float()),
    # bitvec operators (integer bit patterns)
    Op(
        "bitwise_and",
        BITVEC,
        binary=torch.bitwise_and,
        reduce=lambda t, d: _bitreduce(t, d, torch.bitwise_and),
    ),
    Op(
        "bitwise_or",
        BITVEC,
        binary=torch.bitwise_or,
        reduce=lambda t, d: _bitreduce(t, d, torch.bitwise_or),
    ),
    Op(
        "bitwise_xor",
        BITVEC,
        binary=torch.bitwise_xor,
        reduce=lambda t, d: _bitreduce(t, d, torch.bitwise_xor),
    ),
    Op("invert", BITVEC, unary=torch.bitwise_not),
    Op("left_shift", BITVEC, binary=torch.bitwise_left_shift),
    Op("right_shift", BITVEC, binary=lambda a, b: _logical_right_shift(a, b)),
    # unary ALU operators that are also activation functions
    Op("abs", unary=torch.abs, act=torch.abs),
    Op("square", unary=torch.square, act=torch.square),
    Op("relu", unary=torch.relu, act=torch.relu),
    Op("rsqrt", unary=torch.rsqrt, act=torch.rsqrt),
    Op("reciprocal", unary=torch.reciprocal, act=torch.reciprocal),
    # activation functions (Scalar Engine)
    Op("copy", act=lambda x: x),
    Op("exp", act=torch.exp),
    Op("log", act=torch.log),
    Op("sqrt", act=torch.sqrt),
    Op("tanh", act=torch.tanh),
    Op("sigmoid", act=torch.sigmoid),
    Op("gelu", act=lambda x: F.gelu(x)),
    Op("gelu_dx", act=_gelu_dx),
    Op("gelu_apprx_tanh", act=lambda x: F.gelu(x, approximate="tanh")),
    Op("gelu_apprx_sigmoid", act=_gelu_sig),
    Op("gelu_apprx_sigmoid_dx", act=_gelu_sig_dx),
    Op("silu", act=F.silu),
    Op("silu_dx", act=_silu_dx),
    Op("softplus", act=F.softplus),
    Op("mish", act=_mish),
    Op("erf", act=torch.erf),
    Op("erf_dx", act=_erf_dx),
    Op("sin", act=torch.sin),
    Op("cos", act=torch.cos),
    Op("tan", act=torch.tan),
    Op("arctan", act=torch.atan),
    Op("sign", act=torch.sign),
    Op("negative", unary=torch.neg),
    Op("ceil", unary=torch.ceil),
    Op("floor", unary=torch.floor),
    Op("trunc", unary=torch.trunc),
    # reductions usable as reduce ops (nl.max / nl.min are also language reductions)
    Op("max", binary=torch.maximum, reduce=lambda t, d: t.amax(dim=d), identity=-math.inf),
    Op("min", binary=torch.minimum, reduce=lambda t, d: t.amin(dim=d), identity=math.inf),
    Op("sum", reduce=_rsum, identity=0.0),
    Op("mean", reduce=lambda t, d: t.mean(dim=d)),
    Op("prod", reduce=_rprod, identity=1.0),
    Op("var", reduce=lambda t, d: t.var(dim=d, unbiased=False)),
    Op("all", LOGICAL, reduce=lambda t, d: (t != 0).flatten(d[0]).all(dim=d[0]).float()),
    # operator constants
    Op("prelu"),
    # "No-op operator that passes data through unchanged" (the 2.33 stub): an identity
    # activation function and ALU stage (a copy: the result is written to dst)
    Op("bypass", unary=torch.clone, act=torch.clone),
    Op("average", reduce=lambda t, d: t.mean(dim=d)),
)


def _bitreduce(t, dims, fn):
    """Pairwise (tree) reduction: log2(n) vectorised steps."""
    t = t.flatten(dims[0]) if len(dims) > 1 else t
    d = dims[0]
    while t.shape[d] > 1:
        n = t.shape[d]
        half = n // 2
        head = fn(t.narrow(d, 0, half), t.narrow(d, half, half))
        t = torch.cat([head, t.narrow(d, 2 * half, 1)], dim=d) if n % 2 else head
    return t.select(d, 0)


def _logical_right_shift(a, b):
    if a.dtype in (torch.int8, torch.int16, torch.int32, torch.int64):
        bits = a.element_size() * 8
        mask = (1 << bits) - 1
        return ((a.to(torch.int64) & mask) >> b).to(a.dtype)
    return torch.bitwise_right_shift(a, b)


def get(op, role: str = "op") -> Op:
    if isinstance(op, Op):
        return op
    if isinstance(op, str) and op in OPS:
        return OPS[op]
    from . import numpy_names
    from .errors import fail

    np_op = numpy_names.numpy_op_name(op)
    if np_op is not None:
        spelling, nki_name = np_op
        if nki_name is not None and numpy_names.legacy_active():
            return OPS[nki_name]  # a neuronxcc.nki kernel: NumPy functions are its operators
        fail(
            f"{role}={spelling} is a NumPy function, the neuronxcc.nki (pre-0.2) spelling of an "
            f"operator; NKI 0.2+ takes "
            + (f"nl.{nki_name}" if nki_name else "an nl operator (nl.add, nl.exp, ...)")
            + " (or run the kernel unchanged with torch_neuronx.nki.legacy)"
        )

    fail(f"{role}={op!r} is not an NKI operator (use nl.add, nl.multiply, nl.exp, ...)")
