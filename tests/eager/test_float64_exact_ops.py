"""float64/complex128 values that ops move, select, compare or build keep every bit (issue 13).

The dtype policy (docs/eager.md, "Dtype policy"; docs/decisions.md) runs 64-bit *arithmetic* at
float32 precision, but ops that only move or select elements return CPU's bits, comparisons read
the exact values (so they agree with eq/ne and sort), creation ops build exact ranges, and an
in-place op leaves the elements it does not write alone. Each test compares neuron with CPU on
values that float32 cannot hold (2^-40 steps, integers beyond 2^24, denormals, 1e300).
"""

from __future__ import annotations

import warnings

import pytest
import torch

from torch_neuronx.eager import op_policy
from torch_neuronx.testing import opinfo as H

DEV = "neuron"

# Not representable in float32: precision, range and denormals (and the specials).
_VALS = [1 + 2**-40, -(2**30 + 0.5), 1e-320, 2147483647.0, 1e300, -1e-300, 0.1, float("nan")]
_VALS += [float("inf"), -0.0, 3.0, -2.5]
_PERM = torch.randperm(12, generator=torch.Generator().manual_seed(0))
F64 = torch.tensor(_VALS, dtype=torch.float64)[_PERM].reshape(3, 4)
C128 = torch.complex(F64, F64.flip(1))


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the once-per-process float64 / fallback warnings
        yield


def _bits(t: torch.Tensor) -> torch.Tensor:
    if t.is_complex():
        t = torch.view_as_real(t.resolve_conj())
    if t.dtype == torch.float64:
        return t.contiguous().view(torch.int64)
    return t


def _assert_same_bits(n, c, what):
    n = n.cpu()
    assert n.dtype == c.dtype and n.shape == c.shape, (what, n.dtype, c.dtype, n.shape, c.shape)
    assert torch.equal(_bits(n), _bits(c)), f"{what}: neuron\n{n}\ncpu\n{c}"


def _idx(*v):
    return torch.tensor(list(v))


# name -> f(x, y, dev): one call per class member; x (and y) are fresh copies on dev.
MOVES = {
    "take": lambda x, y, d: x.take(_idx(0, 7, 3, 11, 5).to(d)),
    "put_": lambda x, y, d: x.put_(_idx(1, 6).to(d), y.flatten()[:2]),
    "index_fill_": lambda x, y, d: x.index_fill_(0, _idx(1).to(d), 0.5),
    "index_copy_": lambda x, y, d: x.index_copy_(0, _idx(1).to(d), y[:1]),
    "masked_scatter_": lambda x, y, d: x.masked_scatter_(x.real != x.real.flip(0), y),
    "index_put_": lambda x, y, d: x.index_put_((_idx(1).to(d),), y[0]),
    "scatter_": lambda x, y, d: x.scatter_(0, _idx(1, 0, 2, 1).view(1, 4).to(d), y[:1]),
    "gather": lambda x, y, d: x.gather(1, _idx(3, 0, 2).view(3, 1).to(d)),
    "complex": lambda x, y, d: torch.complex(x.real, y.real),
    "conj_physical": lambda x, y, d: torch.conj_physical(x),
    "pixel_shuffle": lambda x, y, d: torch.nn.functional.pixel_shuffle(x.reshape(1, 4, 3, 1), 2),
    "channel_shuffle": lambda x, y, d: torch.nn.functional.channel_shuffle(
        x.reshape(1, 4, 3, 1), 2
    ),
    "unique_dim": lambda x, y, d: torch.unique(x.real, dim=0),
    "reflection_pad": lambda x, y, d: torch.nn.functional.pad(x.real[None], (2, 1), "reflect"),
    "replication_pad": lambda x, y, d: torch.nn.functional.pad(x.real[None], (2, 1), "replicate"),
    "interpolate_nearest": lambda x, y, d: torch.nn.functional.interpolate(
        x.real[None], scale_factor=2.0
    ),
    "int64_viewed_as_float64": lambda x, y, d: (
        torch.arange(8, device=d)
        .view(torch.float64)
        .index_copy_(0, _idx(0).to(d), y.real.flatten()[:1])
    ),
}
SELECTS = {
    "median": lambda x, y, d: x.real.median(),
    "nanmedian": lambda x, y, d: x.real.nanmedian(1).values,
    "kthvalue": lambda x, y, d: x.real.kthvalue(2).values,
    "cummax": lambda x, y, d: x.real.cummax(0).values,
    "cummin": lambda x, y, d: x.real.cummin(1).values,
    "relu": lambda x, y, d: x.real.relu(),
    "relu_": lambda x, y, d: x.real.contiguous().relu_(),
    "relu6": lambda x, y, d: torch.nn.functional.relu6(x.real),
    "hardtanh": lambda x, y, d: torch.nn.functional.hardtanh(x.real, -3.0, 3.0),
    "threshold": lambda x, y, d: torch.nn.functional.threshold(x.real, 0.5, -1.0),
    "clamp_min": lambda x, y, d: x.real.clamp_min(0.1),
    "clamp_max": lambda x, y, d: x.real.clamp_max(0.1),
    "fmax": lambda x, y, d: torch.fmax(x.real, y.real),
    "fmin": lambda x, y, d: torch.fmin(x.real, y.real),
    "heaviside": lambda x, y, d: torch.heaviside(x.real, y.real),
    "nan_to_num": lambda x, y, d: x.nan_to_num(),
    "nan_to_num_": lambda x, y, d: x.nan_to_num_(1.0),
    "max_pool1d": lambda x, y, d: torch.nn.functional.max_pool1d(x.real[None], 2),
    "max_pool2d": lambda x, y, d: torch.nn.functional.max_pool2d(x.real[None, None], 2),
    "adaptive_max_pool2d": lambda x, y, d: torch.nn.functional.adaptive_max_pool2d(
        x.real[None, None], 1
    ),
    "scatter_reduce_amax": lambda x, y, d: x.real.scatter_reduce(
        0, _idx(1, 0, 0, 2).view(1, 4).to(d), y.real[:1], "amax"
    ),
    "scatter_reduce_amin_": lambda x, y, d: x.real.contiguous().scatter_reduce_(
        0, _idx(1, 0, 0, 2).view(1, 4).to(d), y.real[:1], "amin", include_self=False
    ),
    "index_reduce_amax_": lambda x, y, d: x.real.contiguous().index_reduce_(
        0, _idx(1).to(d), y.real[:1], "amax"
    ),
    "index_reduce_amin": lambda x, y, d: x.real.index_reduce(
        0, _idx(1, 2).to(d), y.real[:2], "amin", include_self=False
    ),
    "segment_reduce_max": lambda x, y, d: torch.segment_reduce(
        x.real.flatten(), "max", lengths=_idx(5, 7).to(d)
    ),
    "segment_reduce_min": lambda x, y, d: torch.segment_reduce(
        x.real.flatten(), "min", lengths=_idx(5, 7).to(d)
    ),
    "vector_norm_inf": lambda x, y, d: torch.linalg.vector_norm(x.real.nan_to_num(), float("inf")),
    "vector_norm_ninf_dim": lambda x, y, d: torch.linalg.vector_norm(x.real, -float("inf"), dim=1),
    "linalg_norm_inf": lambda x, y, d: torch.linalg.norm(x.real, float("inf"), dim=1),
    "norm_inf": lambda x, y, d: x.real.nan_to_num().norm(float("inf")),
    "foreach_norm_inf": lambda x, y, d: torch._foreach_norm([x.real, y.real], float("inf"))[1],
}
COMPARES = {
    "lt_at_2_31": lambda x, y, d: (
        torch.tensor([2147483647.0], dtype=x.real.dtype, device=d) < 2147483648
    ),
    "ge_at_2_31": lambda x, y, d: (
        torch.tensor([2147483647.0], dtype=x.real.dtype, device=d) >= 2147483648
    ),
    "lt": lambda x, y, d: x.real < y.real,
    "le": lambda x, y, d: x.real <= y.real,
    "gt": lambda x, y, d: x.real > y.real + 2**-40,
    "ge_": lambda x, y, d: x.real.contiguous().ge_(y.real),
    "logical_not": lambda x, y, d: x.logical_not(),
    "logical_and": lambda x, y, d: x.logical_and(y),
    "any": lambda x, y, d: x.abs().lt(1e-300).any(),
    "all": lambda x, y, d: x.all(1),
    "count_nonzero": lambda x, y, d: x.count_nonzero(),
    "isposinf": lambda x, y, d: x.real.isposinf(),
    "signbit": lambda x, y, d: x.real.signbit(),
    "argmax": lambda x, y, d: torch.tensor(
        [1.0, 1 + 2**-40], dtype=x.real.dtype, device=d
    ).argmax(),
    "searchsorted": lambda x, y, d: torch.searchsorted(
        x.real.flatten().nan_to_num().sort().values, y.real.flatten()
    ),
    "bucketize": lambda x, y, d: torch.bucketize(
        y.real.flatten(), x.real.flatten().nan_to_num().sort().values
    ),
    "isin": lambda x, y, d: torch.isin(x.real, y.real.flatten()[:5]),
}
BITS = {
    "hash_tensor": lambda x, y, d: torch.hash_tensor(x.real),
    "frexp": lambda x, y, d: torch.frexp(x.real)[0],
    "copysign": lambda x, y, d: torch.copysign(x.real, y.real),
    "nextafter": lambda x, y, d: torch.nextafter(x.real, y.real),
}
CREATES = {
    "arange": lambda x, y, d: torch.arange(0, 1, 0.1, dtype=x.dtype, device=d),
    "linspace": lambda x, y, d: torch.linspace(0, 1, 7, dtype=x.dtype, device=d),
    "logspace": lambda x, y, d: torch.logspace(0, 1, 7, dtype=x.dtype, device=d),
    "linspace_complex": lambda x, y, d: torch.linspace(
        0, 1 + 1j, 7, dtype=torch.complex128, device=d
    ),
}
CASES = {**MOVES, **SELECTS, **COMPARES, **BITS, **CREATES}
_REAL_ONLY = {"median", "nanmedian", "kthvalue", "cummax", "cummin", "max_pool1d", "max_pool2d"}
_REAL_ONLY |= set(CREATES) - {"linspace_complex"}


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128], ids=["float64", "complex128"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_op_keeps_every_bit(name, dtype):
    if dtype is torch.complex128 and (name in _REAL_ONLY or name == "linspace_complex"):
        pytest.skip(f"{name}: the real case is the test (x.real of complex128 is the float64 one)")
    base = F64 if dtype is torch.float64 else C128
    res = {}
    for d in ("cpu", DEV):
        x, y = base.clone().to(d), base.flip(0).clone().to(d)
        r = CASES[name](x, y, d)
        res[d] = (r, x)
    _assert_same_bits(res[DEV][0], res["cpu"][0], f"{name} result")
    _assert_same_bits(res[DEV][1], res["cpu"][1], f"{name} input after the call")


# In-place arithmetic that writes part of its tensor: the written elements hold float32-precision
# results, the others keep their bits (before, the whole tensor was rounded).
PARTIAL = {
    "index_add_": lambda x, s, d: x.index_add_(0, _idx(1).to(d), s),
    "scatter_add_": lambda x, s, d: x.scatter_add_(0, _idx(1, 1, 1, 1, 1, 1).view(1, 6).to(d), s),
    "index_put_accumulate": lambda x, s, d: x.index_put_((_idx(1).to(d),), s[0], accumulate=True),
    "put_accumulate": lambda x, s, d: x.put_(torch.arange(6, 12, device=d), s[0], accumulate=True),
    "scatter_reduce_sum_": lambda x, s, d: x.scatter_reduce_(
        0, _idx(1, 1, 1, 1, 1, 1).view(1, 6).to(d), s, "sum"
    ),
    "index_reduce_prod_": lambda x, s, d: x.index_reduce_(0, _idx(1).to(d), s, "prod"),
    "mul_by_row_factors_": lambda x, s, d: x.mul_(
        torch.tensor([1.0, 1.1, 1.0, 1.0], dtype=x.dtype, device=d).view(4, 1)
    ),
}


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128], ids=["float64", "complex128"])
@pytest.mark.parametrize("name", sorted(PARTIAL))
def test_inplace_arithmetic_leaves_unwritten_elements_alone(name, dtype):
    if dtype is torch.complex128 and "reduce" in name:
        pytest.skip(f"{name}: scatter_reduce/index_reduce do not take complex tensors")
    # within float32's range: the written rows are compared with a float32-level tolerance
    vals = torch.tensor(
        [1 + 2**-40, -(2**30 + 0.5), 1e-320, 2147483647.0, 0.1, -2.5], dtype=torch.float64
    )
    base = vals.repeat(4).reshape(4, 6).to(dtype)
    src = torch.full((1, 6), 0.1, dtype=dtype)
    c = PARTIAL[name](base.clone(), src, "cpu")
    n = PARTIAL[name](base.clone().to(DEV), src.to(DEV), DEV).cpu()
    touched = (_bits(c) != _bits(base)).reshape(4, -1).any(-1)
    assert touched.any() and not touched.all(), "the case must write some rows and keep others"
    _assert_same_bits(n[~touched], c[~touched], f"{name}: unwritten rows")
    torch.testing.assert_close(n[touched], c[touched], rtol=1.3e-6, atol=1e-5)


def test_arithmetic_still_has_float32_precision():
    """The exemptions stay exemptions: arithmetic, and scatter_reduce with "sum", is rounded."""
    x = torch.tensor([1 + 2**-40, 2.0], dtype=torch.float64)
    assert (x.to(DEV) * 1.0).cpu()[0].item() == 1.0
    assert x.to(DEV).scatter_reduce(0, _idx(0).to(DEV), x[:1].to(DEV), "sum").cpu()[0] == 2.0
    assert torch.linalg.vector_norm(x.to(DEV), 2).cpu().item() == float(
        torch.linalg.vector_norm(x, 2).float()
    )


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128], ids=["float64", "complex128"])
@pytest.mark.parametrize("with_dtype", [False, True], ids=["", "dtype="])
def test_inf_norm_gradient_finds_its_element(dtype, with_dtype):
    """Norm backward formulas (linalg.vector_norm, renorm) find max |x| by comparing abs(x) with
    the norm: abs and the +-inf norms keep the same bits, with or without a dtype= argument
    (before, the norm was rounded and the gradient was NaN)."""
    z = torch.randn(4, 5, dtype=dtype, generator=torch.Generator().manual_seed(0))
    kw = (
        {"dtype": torch.float64 if dtype is torch.float64 else torch.complex128}
        if with_dtype
        else {}
    )
    grads = {}
    for d in ("cpu", DEV):
        t = z.to(d).detach().requires_grad_()
        n = torch.linalg.vector_norm(t, float("inf"), dim=1, **kw)
        r = torch.renorm(t, float("inf"), 0, 0.5)
        (n.sum() + r.abs().sum()).backward()
        grads[d] = t.grad.cpu()
        assert torch.equal(_bits(n.cpu()), _bits(torch.linalg.vector_norm(z, float("inf"), dim=1)))
    torch.testing.assert_close(grads[DEV], grads["cpu"], rtol=1.3e-6, atol=1e-5)


def test_selection_ops_of_the_policy_are_named():
    """The facts the driver acts on name the classes above."""
    for op in ("take", "put", "index_fill", "relu", "lt", "ge", "hash_tensor", "nan_to_num"):
        assert f"aten::{op}" in op_policy.DATA_MOVEMENT, op
    assert "aten::linspace" in op_policy.CREATION_FROM_NUMBERS
    assert "aten::add" not in op_policy.DATA_MOVEMENT


# OpInfo ops whose CPU float64/complex128 results on every CI sample are input elements, but
# which compute them (so float32 precision applies, by policy).
ARITHMETIC_THAT_LOOKS_LIKE_SELECTION = {
    "quantile": "linear interpolation between order statistics: the samples hit exact ranks",
    "nanquantile": "linear interpolation between order statistics: the samples hit exact ranks",
    "masked.prod": "a product over masks that keep one element per row in these samples",
    "masked.mean": "a mean over masks that keep one element per row in these samples",
}


def _float_bits(tensors) -> torch.Tensor:
    out = [torch.empty(0, dtype=torch.int64)]
    for t in tensors:
        if not isinstance(t, torch.Tensor) or t.layout != torch.strided or t.numel() == 0:
            continue
        t = t.detach().cpu()
        if t.dtype == torch.complex128:
            t = torch.view_as_real(t.resolve_conj())
        if t.dtype == torch.float64:
            out.append(t.resolve_neg().reshape(-1).view(torch.int64))
    return torch.cat(out)


def test_every_opinfo_selection_keeps_bits():
    """Finds the class rather than listing it: every OpInfo op whose float64/complex128 results
    on CPU are always elements of its inputs (on samples holding values float32 cannot) must give
    CPU's bits on neuron. This is the test that would have caught take/median/relu rounding."""
    signed_zeros = torch.tensor([0, -(2**63)], dtype=torch.int64)
    rounding, seen = [], set()
    for op in H.load_op_db():
        key = H.op_key(op)
        if key in ARITHMETIC_THAT_LOOKS_LIKE_SELECTION or key.startswith(("sparse.", "to_sparse")):
            continue
        for dt in (torch.float64, torch.complex128):
            if dt not in H.cpu_dtypes(op):
                continue
            try:
                samples = H.generate_samples(op, dt, False, limit=6)
            except Exception:  # noqa: BLE001 - sample generators that need another device
                continue
            chosen, inexact = [], False
            for s in samples:
                try:
                    with torch.no_grad():
                        r = H._call(op, H.clone_sample(s, "cpu", op))
                except Exception:  # noqa: BLE001 - not a selection we can judge
                    chosen = []
                    break
                ins = _float_bits(H.iter_tensors((s.input, s.args, s.kwargs)))
                outs = _float_bits(H.iter_tensors(r))
                if outs.numel() == 0 or not torch.isin(outs, torch.cat([ins, signed_zeros])).all():
                    chosen = []
                    break
                v = outs.view(torch.float64)
                inexact |= bool(((v.float().double() != v) & ~v.isnan()).any())
                chosen.append(s)
            if not chosen or not inexact:
                continue
            seen.add(key)
            for s in chosen:
                with torch.no_grad():
                    c = _float_bits(H.iter_tensors(H._call(op, H.clone_sample(s, "cpu", op))))
                    n = _float_bits(H.iter_tensors(H._call(op, H.clone_sample(s, DEV, op))))
                if c.shape != n.shape or not torch.equal(c, n):
                    rounding.append(f"{key} {dt}")
                    break
    # the detector finds the classes (views, indexing, selections, argument-decided ones)
    for key in ("take", "median", "nn.functional.relu", "scatter_reduce.amax", "index_copy"):
        assert key in seen, key
    assert not rounding, f"selections that do not keep float64 bits on neuron: {rounding}"
