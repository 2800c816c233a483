"""The eager fast path (csrc/eager/fast_ops.cpp) against the generic path and CPU.

The hottest structured ops run CPU's structured kernel classes directly on neuron tensors.
Every call here runs three times: on CPU, on neuron with the fast path on, and on neuron with
it off (the generic path). Results must be identical (values bit for bit, dtype, shape,
strides), the fast path must have run exactly when the call is eligible, and tracking
(executed ops, kernel plan cache counters) must not depend on the path.
"""

from __future__ import annotations

import contextlib
import os
import warnings

import pytest
import torch
import torch.nn.functional as F

import torch_neuronx
from torch_neuronx import _C
from torch_neuronx.testing.layouts import (
    LAYOUT_NAMES,
    apply_layout,
    describe,
    to_device_keeping_layout,
)

aten = torch.ops.aten


@contextlib.contextmanager
def fast_path(on: bool):
    before = _C._eager_fast_path()
    _C._set_eager_fast_path(on)
    try:
        yield
    finally:
        _C._set_eager_fast_path(before)


def _to(x, device):
    # keep the geometry: sizes, strides, storage offset (transposed, channels_last, expanded
    # and sliced inputs must stay so on the device)
    return to_device_keeping_layout(x, device)


def _same(c: torch.Tensor, n: torch.Tensor, what: str) -> None:
    assert n.device.type == "neuron", what
    assert (n.dtype, n.shape, n.stride()) == (c.dtype, c.shape, c.stride()), (
        f"{what}: neuron {n.dtype} {tuple(n.shape)} {n.stride()} vs CPU "
        f"{c.dtype} {tuple(c.shape)} {c.stride()}"
    )
    n = n.cpu()
    assert torch.equal(c.isnan(), n.isnan()), what
    assert torch.equal(torch.nan_to_num(c, nan=0.0), torch.nan_to_num(n, nan=0.0)), what
    if c.is_floating_point():  # torch.equal takes -0.0 for +0.0: the sign bits too
        assert torch.equal(c.signbit() & ~c.isnan(), n.signbit() & ~n.isnan()), what


def _run(fn, args, on: bool):
    with fast_path(on):
        before = _C._eager_fast_path_calls()
        out = fn(*[_to(a, "neuron") for a in args])
        return out, _C._eager_fast_path_calls() - before


g = torch.Generator().manual_seed(0)


def r(*shape, dtype=torch.float32):
    return torch.randn(*shape, generator=g).to(dtype)


def _clone_first(fn):
    """An in-place op applied to a copy of its first argument (the copy is returned)."""

    def run(x, *rest):
        y = x.clone()
        fn(y, *rest)
        return y

    return run


# (name, fn, args, takes the fast path)
CASES = [
    ("add", torch.add, (r(4, 5), r(5)), True),
    ("add alpha", lambda a, b: torch.add(a, b, alpha=-2.5), (r(3, 4), r(3, 4)), True),
    ("add transposed", torch.add, (r(5, 4).t(), r(4, 5)), True),
    ("add 0-dim", torch.add, (r(4, 5), r(())), True),
    ("add empty", torch.add, (r(0, 5), r(5)), True),
    ("add bf16", torch.add, (r(4, 5, dtype=torch.bfloat16), r(5, dtype=torch.bfloat16)), True),
    # bf16/f16 with a Python number: CPU computes with the number's value in float (generic)
    ("add f16 number", lambda a: a + 0.1, (r(4, 5, dtype=torch.float16),), False),
    ("bf16 times 1.001", lambda a: a * 1.001, (r(40, dtype=torch.bfloat16),), False),
    ("add number", lambda a: a + 3, (r(4, 5),), True),
    ("add bool number", lambda a: a + True, (r(4, 5),), True),
    ("sub", lambda a, b: a - b, (r(4, 5), r(4, 1)), True),
    ("sub alpha", lambda a, b: torch.sub(a, b, alpha=3), (r(4, 5), r(5)), True),
    ("rsub number", lambda a: 1 - a, (r(4, 5),), False),  # rsub: not on the fast path
    ("mul", torch.mul, (r(2, 3, 4), r(3, 1)), True),
    ("mul number", lambda a: a * 0.5, (r(7),), True),
    ("div", torch.div, (r(4, 5), r(4, 5)), True),
    ("div number", lambda a: a / 3.0, (r(4, 5),), True),
    ("add_", _clone_first(lambda a, b: a.add_(b, alpha=2)), (r(4, 5), r(5)), True),
    ("sub_", _clone_first(lambda a, b: a.sub_(b)), (r(4, 5), r(4, 5)), True),
    ("mul_ number", _clone_first(lambda a: a.mul_(0.25)), (r(4, 5),), True),
    ("div_", _clone_first(lambda a, b: a.div_(b)), (r(4, 5), r(1, 5)), True),
    ("mm", torch.mm, (r(4, 5), r(5, 3)), True),
    ("mm transposed", torch.mm, (r(5, 4).t(), r(3, 5).t()), True),
    ("addmm", torch.addmm, (r(3), r(4, 5), r(5, 3)), True),
    (
        "addmm beta alpha",
        lambda c, a, b: torch.addmm(c, a, b, beta=0.5, alpha=2),
        (r(4, 3), r(4, 5), r(5, 3)),
        True,
    ),
    ("sum dim", lambda a: a.sum(0), (r(4, 5),), True),
    ("sum dims keepdim", lambda a: a.sum((0, 2), keepdim=True), (r(3, 4, 5),), True),
    ("sum all dims", lambda a: aten.sum.dim_IntList(a, None), (r(3, 4),), True),
    (
        "threshold_backward",
        lambda a, b: aten.threshold_backward(a, b, 0.0),
        (r(4, 5), r(4, 5)),
        True,
    ),
    ("neg", torch.neg, (r(4, 5),), True),
    ("rsqrt", torch.rsqrt, (r(4, 5).abs(),), True),
    ("silu", F.silu, (r(4, 5),), True),
    ("silu_backward", lambda a, b: aten.silu_backward(a, b), (r(4, 5), r(4, 5)), True),
    ("gelu", F.gelu, (r(4, 5),), False),  # CPU's gelu uses oneDNN for CPU tensors only
    ("pow", lambda a: a.pow(2), (r(4, 5),), True),
    ("pow 0.5", lambda a: a.abs().pow(0.5), (r(4, 5),), True),
    ("pow 1 (a copy)", lambda a: a.pow(1), (r(4, 5),), True),
    ("pow 0 (a fill)", lambda a: a.pow(0), (r(4, 5),), True),
    ("relu", F.relu, (r(4, 5),), True),
    ("relu bf16", F.relu, (r(40, 5, dtype=torch.bfloat16),), True),
    ("log_softmax", lambda a: F.log_softmax(a, -1), (r(4, 5),), True),
    ("log_softmax dim 0", lambda a: F.log_softmax(a, 0), (r(4, 5),), True),
    ("log_softmax f16", lambda a: F.log_softmax(a, -1), (r(4, 50, dtype=torch.float16),), True),
    (
        "log_softmax_backward",
        lambda g, o: aten._log_softmax_backward_data(g, o, 1, torch.float32),
        (r(4, 5), r(4, 5)),
        True,
    ),
    ("fill_", _clone_first(lambda a: a.fill_(2.5)), (r(4, 5),), True),
    ("zeros_like", torch.zeros_like, (r(3, 7),), True),
    ("zero_", _clone_first(lambda a: a.zero_()), (r(4, 5),), True),
    ("zero_ int", lambda a: a.mul(1).zero_(), (torch.arange(6),), False),
    ("fill_ transposed", _clone_first(lambda a: a.t().fill_(-1)), (r(4, 5),), True),
    # bf16/fp16 matmuls may use oneDNN for CPU tensors: generic path
    ("mm bf16", torch.mm, (r(16, 32, dtype=torch.bfloat16), r(32, 8, dtype=torch.bfloat16)), False),
    ("mm f16", torch.mm, (r(16, 32, dtype=torch.float16), r(32, 8, dtype=torch.float16)), False),
    ("mm large", torch.mm, (r(64, 128), r(128, 96)), True),
    (
        "addmm bf16",
        torch.addmm,
        (
            r(8, dtype=torch.bfloat16),
            r(16, 32, dtype=torch.bfloat16),
            r(32, 8, dtype=torch.bfloat16),
        ),
        False,
    ),
    (
        "mul signed zeros",
        torch.mul,
        (torch.tensor([0.0, -0.0, 1.0, -1.0]), torch.tensor([-1.0, 1.0, -0.0, 0.0])),
        True,
    ),
    ("neg zeros", torch.neg, (torch.zeros(3, 4),), True),
    ("sum bf16", lambda a: a.sum(-1), (r(8, 300, dtype=torch.bfloat16),), True),
    ("sum f16 large", lambda a: a.sum(0), (r(1000, 33, dtype=torch.float16),), True),
    # two reduced dims the iterator cannot merge: CPU accumulates in a float32 buffer, but
    # only for CPU tensors (fast_ops.cpp, cpu_may_buffer_reduced_sum): the generic path
    (
        "sum bf16 sliced 2 dims",
        lambda a: a.sum((0, 2)),
        (r(50, 4, 60, dtype=torch.bfloat16)[:, :, ::2],),
        False,
    ),
    (
        "sum f16 sliced 2 dims",
        lambda a: a.sum((0, 2)),
        (r(50, 4, 60, dtype=torch.float16)[:, :, ::2],),
        False,
    ),
    ("silu bf16", F.silu, (r(64, 33, dtype=torch.bfloat16),), True),
    (
        "mul bf16 large",
        torch.mul,
        (r(64, 300, dtype=torch.bfloat16), r(300, dtype=torch.bfloat16)),
        True,
    ),
    ("rsqrt f16", torch.rsqrt, (r(4, 5, dtype=torch.float16).abs(),), True),
    ("pow bf16", lambda a: a.pow(3), (r(40, 5, dtype=torch.bfloat16),), True),
    ("f16 plus a number beyond its range", lambda a: a + 1e6, (r(4, dtype=torch.float16),), False),
    ("f32 plus a number beyond its range", lambda a: a + 1e300, (r(4),), True),
    ("f32 plus a large int", lambda a: a + (2**53 + 1), (r(4),), True),
    # not eligible: the generic path runs them (same results)
    (
        "uint8 plus an out-of-range number",
        lambda a: a + 1000,
        (torch.tensor([0, 0, 1], dtype=torch.uint8),),
        False,
    ),
    ("int plus a number", lambda a: a + 3, (torch.arange(5, dtype=torch.int32),), False),
    ("add int", torch.add, (torch.arange(6).reshape(2, 3), torch.arange(3)), False),
    ("add mixed dtypes", torch.add, (r(4, 5), r(5, dtype=torch.float16)), False),
    ("add float64", torch.add, (r(4, 5, dtype=torch.float64), r(5, dtype=torch.float64)), False),
    ("int tensor times number", lambda a: a * 1.5, (torch.arange(6),), False),
    ("sum dtype", lambda a: a.sum(0, dtype=torch.float64), (r(4, 5),), False),
    ("div int", torch.div, (torch.arange(1, 7), torch.arange(1, 7)), False),
]


def _flat(*ts):
    """Several results as one tensor (each flattened, then concatenated), to compare at once."""
    return torch.cat([t.reshape(-1).to(ts[0].dtype) for t in ts])


def _foreach(op, n_lists, *extra, clone=True, copy=torch.clone):
    """A foreach op on lists of three tensors of different shapes; the lists' final values.
    In-place ops work on copies (`copy`: a clone, itself a fast device copy on neuron)."""

    def run(*flat):
        lists = [list(flat[i * 3 : i * 3 + 3]) for i in range(n_lists)]
        if clone:
            lists[0] = [copy(t) for t in lists[0]]
        out = op(*lists, *extra)
        return _flat(*(out if out is not None else lists[0]))

    return run


def _lists(n, dtype=torch.float32, positive=False):
    shapes = [(4, 5), (7,), (2, 3, 2)]
    return tuple(
        (r(*s, dtype=dtype).abs() + 0.1 if positive else r(*s, dtype=dtype))
        for _ in range(n)
        for s in shapes
    )


def _ln_backward(g, x, w, b, mask=(True, True, True)):
    _, mean, rstd = aten.native_layer_norm(x, [5], w, b, 1e-5)
    out = aten.native_layer_norm_backward(g, x, [5], mean, rstd, w, b, list(mask))
    return _flat(*(t for t, m in zip(out, mask, strict=True) if m))


def _nll_backward(g, logp, target, reduction=1):
    _, total = aten.nll_loss_forward(logp, target, None, reduction, -100)
    return aten.nll_loss_backward(g, logp, target, None, reduction, -100, total)


_target = torch.tensor([1, 0, 4, 2, 2, 3])
_target_ignored = torch.tensor([1, -100, 4, 2, -100, 3])


def _generic_copy(t):
    """A copy of an integer or bfloat16 tensor made by ops the generic path runs (t * 1)."""
    return t * 1


# Ops of fast_foreach.cpp (torch.optim's foreach steps), fast_norm_loss.cpp and fast_copy.cpp.
CASES += [
    ("foreach add_ Scalar", _foreach(torch._foreach_add_, 1, 1e-8), _lists(1), True),
    (
        "foreach add_ List",
        _foreach(lambda a, b: torch._foreach_add_(a, b, alpha=-0.1), 2),
        _lists(2),
        True,
    ),
    ("foreach mul_ Scalar", _foreach(torch._foreach_mul_, 1, 0.999), _lists(1), True),
    ("foreach mul_ int", _foreach(torch._foreach_mul_, 1, 3), _lists(1), True),
    ("foreach div_ ScalarList", _foreach(torch._foreach_div_, 1, [0.9, 1.1, 3.0]), _lists(1), True),
    ("foreach lerp_", _foreach(torch._foreach_lerp_, 2, 0.1), _lists(2), True),
    (
        "foreach addcmul_",
        _foreach(lambda a, b, c: torch._foreach_addcmul_(a, b, c, value=0.001), 3),
        _lists(3),
        True,
    ),
    (
        "foreach addcdiv_",
        _foreach(lambda a, b, c: torch._foreach_addcdiv_(a, b, c, value=-0.5), 3, clone=True),
        _lists(1) + _lists(2, positive=True),
        True,
    ),
    (
        "foreach addcdiv_ ScalarList",
        _foreach(torch._foreach_addcdiv_, 3, [-1e-3, 2.0, 0.5]),
        _lists(1) + _lists(2, positive=True),
        True,
    ),
    ("foreach sqrt", _foreach(torch._foreach_sqrt, 1, clone=False), _lists(1, positive=True), True),
    (
        "foreach lerp_ bf16",
        _foreach(torch._foreach_lerp_, 2, 0.1),
        _lists(2, dtype=torch.bfloat16),
        True,
    ),
    # a Python number next to bfloat16 (CPU computes with its float value): generic path
    (
        "foreach mul_ bf16",
        _foreach(torch._foreach_mul_, 1, 0.999, copy=_generic_copy),
        _lists(1, dtype=torch.bfloat16),
        False,
    ),
    (
        "foreach add_ List int",
        _foreach(torch._foreach_add_, 2, copy=_generic_copy),
        tuple(torch.arange(6).reshape(2, 3) for _ in range(6)),
        False,
    ),
    ("layer_norm", lambda x, w, b: F.layer_norm(x, (5,), w, b), (r(3, 4, 5), r(5), r(5)), True),
    ("layer_norm no affine", lambda x: F.layer_norm(x, (4, 5)), (r(3, 4, 5),), True),
    (
        "layer_norm bf16",
        lambda x, w, b: F.layer_norm(x, (5,), w, b),
        (r(6, 5, dtype=torch.bfloat16), r(5, dtype=torch.bfloat16), r(5, dtype=torch.bfloat16)),
        True,
    ),
    (
        "layer_norm transposed",
        lambda x, w, b: F.layer_norm(x, (5,), w, b),
        (r(5, 6).t(), r(5), r(5)),
        True,
    ),
    # bfloat16 input with float32 parameters (mixed precision): generic path
    (
        "layer_norm mixed",
        lambda x, w, b: F.layer_norm(x, (5,), w, b),
        (r(6, 5, dtype=torch.bfloat16), r(5), r(5)),
        False,
    ),
    (
        "layer_norm stats",
        lambda x, w, b: _flat(*aten.native_layer_norm(x, [5], w, b, 1e-5)),
        (r(3, 4, 5), r(5), r(5)),
        True,
    ),
    ("layer_norm backward", _ln_backward, (r(3, 5), r(3, 5), r(5), r(5)), True),
    (
        "layer_norm backward no affine",
        lambda g, x: _ln_backward(g, x, None, None, (True, False, False)),
        (r(3, 5), r(3, 5)),
        True,
    ),
    ("nll_loss", lambda x, t: F.nll_loss(x, t), (F.log_softmax(r(6, 5), -1), _target), True),
    (
        "nll_loss sum",
        lambda x, t: F.nll_loss(x, t, reduction="sum"),
        (F.log_softmax(r(6, 5), -1), _target),
        True,
    ),
    (
        "nll_loss none",
        lambda x, t: F.nll_loss(x, t, reduction="none"),
        (F.log_softmax(r(6, 5), -1), _target),
        True,
    ),
    (
        "nll_loss ignore_index",
        lambda x, t: F.nll_loss(x, t),
        (F.log_softmax(r(6, 5), -1), _target_ignored),
        True,
    ),
    (
        "nll_loss weight",
        lambda x, t, w: F.nll_loss(x, t, weight=w),
        (F.log_softmax(r(6, 5), -1), _target, r(5).abs()),
        True,
    ),
    (
        "nll_loss bf16",
        lambda x, t: F.nll_loss(x, t),
        (F.log_softmax(r(6, 5), -1).bfloat16(), _target),
        True,
    ),
    (
        "nll_loss uint8 target",
        lambda x, t: F.nll_loss(x, t),
        (F.log_softmax(r(6, 5), -1), _target.byte()),
        False,
    ),
    ("nll_loss backward", _nll_backward, (r(()), F.log_softmax(r(6, 5), -1), _target), True),
    (
        "nll_loss backward none",
        lambda g, x, t: _nll_backward(g, x, t, 0),
        (r(6), F.log_softmax(r(6, 5), -1), _target_ignored),
        True,
    ),
    ("cross_entropy", lambda x, t: F.cross_entropy(x, t), (r(6, 5), _target), True),
    ("copy_", lambda a, b: b.clone().copy_(a), (r(4, 5), r(4, 5)), True),
    ("copy_ transposed", lambda a, b: b.clone().copy_(a), (r(5, 4).t(), r(4, 5)), True),
    ("copy_ broadcast", lambda a, b: b.clone().copy_(a), (r(5), r(4, 5)), True),
    (
        "copy_ to bf16",
        lambda a, b: b.clone().copy_(a),
        (r(4, 5), r(4, 5, dtype=torch.bfloat16)),
        True,
    ),
    (
        "copy_ int64 to f32",
        lambda a, b: b.clone().copy_(a),
        (torch.arange(20).reshape(4, 5) * 12345678, r(4, 5)),
        True,
    ),
    (
        "copy_ f64",
        lambda a, b: b.clone().copy_(a),
        (r(4, 5, dtype=torch.float64) / 3, r(4, 5, dtype=torch.float64)),
        True,
    ),
    ("contiguous", lambda a: a.contiguous(), (r(5, 4).t(),), True),
    # the single-tensor ops of the for-loop optimizers (foreach=False)
    ("lerp_", _clone_first(lambda a, b: a.lerp_(b, 0.1)), (r(4, 5), r(4, 5)), True),
    ("lerp_ broadcast", _clone_first(lambda a, b: a.lerp_(b, 0.9)), (r(4, 5), r(5)), True),
    (
        "addcmul_",
        _clone_first(lambda a, b, c: a.addcmul_(b, c, value=0.01)),
        (r(4, 5), r(4, 5), r(4, 5)),
        True,
    ),
    (
        "addcdiv_",
        _clone_first(lambda a, b, c: a.addcdiv_(b, c, value=-0.5)),
        (r(4, 5), r(4, 5), r(4, 5).abs() + 0.1),
        True,
    ),
    (
        "addcdiv_ bf16",
        _clone_first(lambda a, b, c: a.addcdiv_(b, c, value=2)),
        (
            r(4, 5, dtype=torch.bfloat16),
            r(4, 5, dtype=torch.bfloat16),
            r(4, 5, dtype=torch.bfloat16).abs() + 0.1,
        ),
        True,
    ),
    ("sqrt", torch.sqrt, (r(4, 5).abs(),), True),
    ("sqrt f16", torch.sqrt, (r(4, 5, dtype=torch.float16).abs(),), True),
    ("sqrt int", torch.sqrt, (torch.arange(6),), False),
]


@pytest.mark.parametrize("name,fn,args,fast", CASES, ids=[c[0] for c in CASES])
def test_fast_and_generic_paths_agree_with_cpu(name, fn, args, fast):
    _check_paths(name, fn, args, fast, exact_fast_count=True)


def _check_paths(name, fn, args, fast, exact_fast_count):
    """CPU, the fast path and the generic path give the same values, dtype, shape and strides;
    the fast path ran iff the call is eligible (`exact_fast_count`), or at least when it is
    (other layouts can add fast calls of their own: a reshape's copy in the case's code)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the float64 policy warning
        expected = fn(*args)
        on, on_calls = _run(fn, args, True)
        off, off_calls = _run(fn, args, False)
    if expected.dtype != torch.float64:
        _same(expected, on, f"{name} (fast path)")
    _same(off.cpu() if expected.dtype == torch.float64 else expected, on, f"{name} fast vs generic")
    _same(expected if expected.dtype != torch.float64 else off.cpu(), off, f"{name} (generic path)")
    assert off_calls == 0
    if exact_fast_count or fast:
        assert (on_calls > 0) == fast, f"{name}: fast path calls {on_calls}, expected fast={fast}"


# Every case again with its tensor arguments in each memory layout (issue 26: a binary op of two
# channels_last tensors was wrong on the fast path only; no contiguous case could see it).
def _layout_case(name, fn, args, fast, layout):
    args = tuple(apply_layout(a, layout) for a in args)
    if name == "contiguous" and args[0].is_contiguous():  # (an offset view) nothing to copy
        fast = False
    return pytest.param(name, fn, args, fast, id=f"{name}-{layout}")


LAYOUT_CASES = [
    _layout_case(*case, layout)
    for layout in LAYOUT_NAMES
    if layout != "contiguous"
    for case in CASES
]


@pytest.mark.parametrize("name,fn,args,fast", LAYOUT_CASES)
def test_paths_agree_with_cpu_in_every_layout(name, fn, args, fast):
    shapes = ", ".join(describe(a) for a in args if isinstance(a, torch.Tensor))
    _check_paths(f"{name} [{shapes}]", fn, args, fast, exact_fast_count=False)


def _cl(*shape, dtype=torch.float32):
    x = r(*shape, dtype=dtype)
    fmt = torch.channels_last if x.dim() == 4 else torch.channels_last_3d
    return x.contiguous(memory_format=fmt)


# The reproducers and their kin: channels_last (2-D and 3-D) with channels_last, with
# contiguous, with a broadcast per-channel tensor, and ops of the conv nets' residual blocks.
CHANNELS_LAST_CASES = [
    ("add cl+cl", torch.add, (_cl(2, 8, 5, 5), _cl(2, 8, 5, 5)), True),
    ("mul cl*cl", torch.mul, (_cl(2, 8, 5, 5), _cl(2, 8, 5, 5)), True),
    ("sub cl-cl 3d", torch.sub, (_cl(2, 4, 3, 5, 5), _cl(2, 4, 3, 5, 5)), True),
    ("add cl+contiguous", torch.add, (_cl(2, 8, 5, 5), r(2, 8, 5, 5)), True),
    ("add contiguous+cl", torch.add, (r(2, 8, 5, 5), _cl(2, 8, 5, 5)), True),
    ("mul cl*per-channel", torch.mul, (_cl(2, 8, 5, 5), r(8, 1, 1)), True),
    ("div cl/number", lambda a: a / 3.0, (_cl(2, 8, 5, 5),), True),
    ("add_ cl", _clone_first(lambda a, b: a.add_(b)), (_cl(2, 8, 5, 5), _cl(2, 8, 5, 5)), True),
    ("relu cl", F.relu, (_cl(2, 8, 5, 5),), True),
    ("silu cl bf16", F.silu, (_cl(2, 8, 5, 5, dtype=torch.bfloat16),), True),
    ("neg cl 3d", torch.neg, (_cl(1, 3, 2, 4, 4),), True),
    ("sum cl over HW", lambda a: a.sum((2, 3)), (_cl(2, 8, 5, 5),), True),
    ("sum cl keepdim", lambda a: a.sum((2, 3), keepdim=True), (_cl(2, 8, 5, 5),), True),
    (
        "threshold_backward cl",
        lambda a, b: aten.threshold_backward(a, b, 0.0),
        (_cl(2, 8, 5, 5), _cl(2, 8, 5, 5)),
        True,
    ),
    (
        "copy_ cl into contiguous",
        lambda a, b: b.clone().copy_(a),
        (_cl(2, 8, 5, 5), r(2, 8, 5, 5)),
        True,
    ),
    ("clone cl", torch.clone, (_cl(2, 8, 5, 5),), True),
]


@pytest.mark.parametrize(
    "name,fn,args,fast", CHANNELS_LAST_CASES, ids=[c[0] for c in CHANNELS_LAST_CASES]
)
def test_channels_last_ops_agree_with_cpu(name, fn, args, fast):
    _check_paths(name, fn, args, fast, exact_fast_count=True)


def test_channels_last_residual_add_reproducer():
    """The issue's reproducer as a user writes it (Tensor.to, no layout helper)."""
    a = torch.randn(2, 8, 5, 5).contiguous(memory_format=torch.channels_last)
    b = torch.randn(2, 8, 5, 5).contiguous(memory_format=torch.channels_last)
    for on in (True, False):
        with fast_path(on):
            got = a.to("neuron") + b.to("neuron")
            assert got.stride() == (a + b).stride()
            assert torch.equal(got.cpu(), a + b), on
            assert torch.equal((a.to("neuron") * b.to("neuron")).cpu(), a * b), on


@pytest.mark.parametrize(
    "fn,args",
    [
        (lambda a, b: a.add_(b), (r(3), r(2, 3))),  # in-place result cannot broadcast
        (torch.mm, (r(2, 3), r(4, 5))),
        (torch.add, (r(2, 3), r(4, 3))),
        (lambda a, b, c: torch.addmm(a, b, c), (r(7), r(2, 3), r(3, 5))),
    ],
)
def test_errors_are_cpus(fn, args):
    with pytest.raises(RuntimeError) as cpu:
        fn(*args)
    for on in (True, False):
        with pytest.raises(RuntimeError) as dev:
            _run(fn, args, on)
        assert type(dev.value) is type(cpu.value)
        assert str(dev.value).splitlines()[0] == str(cpu.value).splitlines()[0]


def _tracking(fn, args):
    x = [_to(a, "neuron") for a in args]
    fn(*x)  # plans built
    _C._clear_op_tracking()
    _C._clear_counters()
    fn(*x)
    c = _C._counters()
    return (
        _C._executed_ops(),
        c["CompilationCache.InMemoryHits"],
        c["CompilationCache.InMemoryMisses"],
    )


@pytest.mark.parametrize("name,fn,args,fast", CASES, ids=[c[0] for c in CASES])
def test_tracking_and_plan_counters_do_not_depend_on_the_path(name, fn, args, fast):
    with fast_path(True):
        on = _tracking(fn, args)
    with fast_path(False):
        off = _tracking(fn, args)
    assert on == off


@pytest.mark.parametrize("fast_first", [True, False], ids=["fast path first", "generic first"])
def test_both_paths_share_the_plan_cache_entries(py, fast_first):
    # The fast path keys its plan lookups from its typed arguments (csrc/eager/plan_key.h),
    # the generic path from the boxed ones: a signature either path cached is a hit on the
    # other. A fresh interpreter, so that no earlier test cached these signatures.
    py(
        f"""
        import sys, warnings
        sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
        import test_fast_path as t
        from torch_neuronx import _C
        def run_all(on):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for name, fn, args, fast in t.CASES:
                    if fast:
                        t._run(fn, args, on)
        run_all({fast_first})
        _C._clear_counters()
        run_all({not fast_first})
        c = _C._counters()
        assert c["CompilationCache.InMemoryMisses"] == 0, c
        assert c["CompilationCache.InMemoryHits"] > 0, c
        """
    )


def test_measuring_sends_ops_through_the_generic_path():
    a = torch.ones(8, device="neuron")
    with fast_path(True):
        before = _C._eager_fast_path_calls()
        with torch_neuronx.perf.measure() as m:
            a + a
        assert _C._eager_fast_path_calls() == before  # the model sees every op
        assert any("add" in e.cost.name for e in m.events)
        a + a
        assert _C._eager_fast_path_calls() == before + 1


def test_reduced_precision_float32_matmul_takes_the_generic_path():
    a, b = torch.randn(8, 16, device="neuron"), torch.randn(16, 4, device="neuron")
    before = torch.get_float32_matmul_precision()
    with fast_path(True):
        try:
            torch.set_float32_matmul_precision("medium")
            n = _C._eager_fast_path_calls()
            out = a @ b
            assert _C._eager_fast_path_calls() == n
            assert torch.equal(out.cpu(), a.cpu() @ b.cpu())  # CPU's own choice of kernel
            torch.set_float32_matmul_precision("highest")
            a @ b
            assert _C._eager_fast_path_calls() == n + 1
        finally:
            torch.set_float32_matmul_precision(before)


@pytest.mark.parametrize("precision", ["bf16", "tf32"])
def test_onednn_float32_matmul_precision_takes_the_generic_path(precision):
    # torch.backends.mkldnn.matmul.fp32_precision is what CPU's float32 matmul reads; the fast
    # path asked float32MatmulPrecision(), which throws once the per-backend API is used alone
    # (a neuron mm raised where CPU's ran, on both paths)
    a, b, c = r(16, 32), r(32, 8), r(8)
    before = torch.backends.mkldnn.matmul.fp32_precision
    try:
        torch.backends.mkldnn.matmul.fp32_precision = precision
        for on in (True, False):
            with fast_path(on):
                n = _C._eager_fast_path_calls()
                _same(torch.mm(a, b), torch.mm(_to(a, "neuron"), _to(b, "neuron")), "mm")
                out = torch.addmm(_to(c, "neuron"), _to(a, "neuron"), _to(b, "neuron"))
                _same(torch.addmm(c, a, b), out, "addmm")
                assert _C._eager_fast_path_calls() == n  # CPU's own choice of kernel
    finally:
        torch.backends.mkldnn.matmul.fp32_precision = before


def test_device_copy_keeps_cpus_overlap_check_and_skips_self_copies():
    for on in (True, False):
        with fast_path(on):
            x = torch.arange(6.0, device="neuron")
            x.copy_(x)  # onto itself: nothing to do
            x[:3].copy_(x[3:])  # disjoint halves of one storage
            assert x.cpu().tolist() == [3.0, 4.0, 5.0, 3.0, 4.0, 5.0]
    # CPU refuses a partially overlapping copy, and so does the device, on both paths (complex
    # values take the general kernel even with the fast path on)
    for on in (True, False):
        for dtype in (torch.float32, torch.complex64):
            with fast_path(on):
                y = torch.arange(5, device="neuron").to(dtype)
                with pytest.raises(RuntimeError, match="single memory location"):
                    y[1:].copy_(y[:-1])
                assert y.cpu().tolist() == [0.0, 1.0, 2.0, 3.0, 4.0], (on, dtype)
                y[1:].copy_(y[:-1].clone())  # what the message says to do
                assert y.cpu().tolist() == [0.0, 0.0, 1.0, 2.0, 3.0], (on, dtype)


def test_copies_inside_a_fast_kernel_are_not_counted_as_calls():
    """linear's addmm copies its bias into the result on the device: one call, as the generic
    path counts it."""
    x, w, b = (torch.randn(*s, device="neuron") for s in ((4, 8), (3, 8), (3,)))
    with fast_path(True):
        n = _C._eager_fast_path_calls()
        out = torch.addmm(b, x, w.t())
        assert _C._eager_fast_path_calls() == n + 1
    assert torch.equal(out.cpu(), torch.addmm(b.cpu(), x.cpu(), w.cpu().t()))


def test_adamw_and_sgd_steps_take_the_fast_kernels():
    """torch.optim's steps (foreach, and AdamW's for-loop): the same parameters on both paths,
    and the fast kernels ran."""
    from torch_neuronx.testing.models import build_tinygpt, make_batch

    for make_opt in (
        lambda p: torch.optim.AdamW(p, lr=1e-3, weight_decay=0.1),
        lambda p: torch.optim.AdamW(p, lr=1e-3, weight_decay=0.1, foreach=False),
        lambda p: torch.optim.Adam(p, lr=1e-3),
        lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=1e-4),
    ):
        results = []
        for on in (True, False):
            with fast_path(on):
                model = build_tinygpt(0, "neuron")
                opt = make_opt(model.parameters())
                idx, tgt = make_batch(0, batch_size=2, device="neuron")
                calls = _C._eager_fast_path_calls()
                for _ in range(2):
                    opt.zero_grad(set_to_none=True)
                    _, loss = model(idx, tgt)
                    loss.backward()
                    opt.step()
                calls = _C._eager_fast_path_calls() - calls
                results.append((calls, [p.detach().cpu() for p in model.parameters()]))
        (calls_on, p_on), (calls_off, p_off) = results
        assert calls_on > 0 and calls_off == 0
        for a, b in zip(p_on, p_off, strict=True):
            assert torch.equal(a, b)


def test_strict_mode_is_unaffected():
    a = torch.ones(8, device="neuron")
    with fast_path(True):
        _C._set_strict(True)
        try:
            torch.testing.assert_close((a + a).cpu(), torch.full((8,), 2.0))
        finally:
            _C._set_strict(False)


def test_training_step_is_identical_on_both_paths():
    from torch_neuronx.testing.models import build_mlp, make_mlp_batch

    results = []
    for on in (True, False):
        with fast_path(on):
            model = build_mlp(0, "neuron")
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            x, y = make_mlp_batch(0, batch_size=16, device="neuron")
            losses = []
            for _ in range(3):
                opt.zero_grad(set_to_none=True)
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                opt.step()
                losses.append(loss.item())
            results.append((losses, [p.detach().cpu() for p in model.parameters()]))
    (l1, p1), (l0, p0) = results
    assert l1 == l0
    for a, b in zip(p1, p0, strict=True):
        assert torch.equal(a, b)


def test_outputs_and_temporaries_stay_on_the_inputs_device():
    if torch.neuron.device_count() < 2:
        pytest.skip("needs two neuron devices (the emulated instance has one core)")
    torch.neuron.set_device(0)
    a = torch.ones(4, device="neuron:1")
    m1, m2 = torch.randn(8, 16).t().to("neuron:1"), torch.randn(8, 4).to("neuron:1")  # mm copies
    with fast_path(True):
        n = _C._eager_fast_path_calls()
        torch.neuron.reset_peak_memory_stats(0)
        before0 = torch.neuron.max_memory_allocated(0)
        before1 = torch.neuron.memory_allocated(1)
        out = a + a
        prod = m1.mm(m2)
        assert _C._eager_fast_path_calls() == n + 2
        assert out.device == prod.device == torch.device("neuron:1")
        assert torch.neuron.memory_allocated(1) > before1
        assert torch.neuron.max_memory_allocated(0) == before0  # nothing landed on device 0
    assert torch.equal(prod.cpu(), m1.cpu().mm(m2.cpu()))
