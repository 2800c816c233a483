"""PyTorch's dtype contract on neuron (issue 13, points 1 and 9).

64-bit floating arithmetic runs at float32 precision on the NeuronCore, but every result keeps
the dtype and shape CPU gives, type promotion is CPU's, and argument validation that CPU (or an
accelerator) performs is performed. Quantized tensors are refused with a clear error; random
ops keep their 64-bit ranges. Each test compares neuron against CPU directly.
"""

from __future__ import annotations

import warnings

import pytest
import torch

from torch_neuronx.eager import op_policy

DEV = "neuron"
F32_TOL = {"atol": 1e-5, "rtol": 1.3e-6}  # float32-level tolerance (docs/eager.md)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the once-per-process float64 / fallback warnings
        yield


def _tree(x, fn):
    if isinstance(x, torch.Tensor):
        return fn(x)
    if isinstance(x, (tuple, list)):
        return (
            type(x)(_tree(v, fn) for v in x)
            if not hasattr(x, "_fields")
            else [_tree(v, fn) for v in x]
        )
    return x


def _both(fn, *inputs, **tol):
    """fn on CPU inputs and on neuron copies: same dtypes, shapes, values (float32-level)."""
    cpu = fn(*inputs)
    dev = fn(*[_tree(t, lambda t: t.to(DEV)) for t in inputs])
    cpu_l = [cpu] if isinstance(cpu, torch.Tensor) else list(cpu)
    dev_l = [dev] if isinstance(dev, torch.Tensor) else list(dev)
    assert len(cpu_l) == len(dev_l)
    for c, d in zip(cpu_l, dev_l, strict=True):
        assert d.device.type == DEV
        assert d.dtype == c.dtype, (d.dtype, c.dtype)
        assert d.shape == c.shape, (d.shape, c.shape)
        torch.testing.assert_close(d.cpu(), c, equal_nan=True, **(tol or F32_TOL))
    return cpu, dev


g = torch.Generator().manual_seed(0)
X64 = torch.randn(4, 6, dtype=torch.float64, generator=g)
C128 = torch.randn(4, 6, dtype=torch.complex128, generator=g)


# --- results keep CPU's dtype and shape -----------------------------------------------------


@pytest.mark.parametrize(
    "name,fn,inputs",
    [
        ("fft float64", lambda x: torch.fft.fft(x), (X64,)),
        ("rfft float64", lambda x: torch.fft.rfft(x), (X64,)),
        ("fft complex128", lambda x: torch.fft.fft(x), (C128,)),
        ("ifft2 complex128", lambda x: torch.fft.ifft2(x), (C128,)),
        ("irfft complex128", lambda x: torch.fft.irfft(x), (C128,)),
        (
            "conv1d complex128",
            lambda i, w: torch.nn.functional.conv1d(i, w),
            (C128.reshape(1, 4, 6), torch.randn(2, 4, 3, dtype=torch.complex128, generator=g)),
        ),
        (
            "conv2d float64",
            lambda i, w: torch.nn.functional.conv2d(i, w),
            (X64.reshape(1, 1, 4, 6), torch.randn(2, 1, 2, 2, dtype=torch.float64, generator=g)),
        ),
        ("sum dtype=float32", lambda x: x.sum(1, dtype=torch.float32), (X64,)),
        ("mean dtype=float32", lambda x: x.mean(0, dtype=torch.float32), (X64,)),
        ("cumsum dtype=float32", lambda x: x.cumsum(1, dtype=torch.float32), (X64,)),
        ("cumprod dtype=complex64", lambda x: x.cumprod(0, dtype=torch.complex64), (C128,)),
        ("prod dtype=float32", lambda x: x.prod(0, dtype=torch.float32), (X64,)),
        ("softmax dtype=float32", lambda x: x.softmax(1, dtype=torch.float32), (X64,)),
        ("complex from float64 parts", lambda a, b: torch.complex(a, b), (X64, X64 * 2)),
        ("polar float64", lambda a, b: torch.polar(a.abs(), b), (X64, X64)),
        ("cov complex128", lambda x: torch.cov(x), (C128,)),
        ("corrcoef float64", lambda x: torch.corrcoef(x), (X64,)),
        ("view_as_real complex128", lambda x: torch.view_as_real(x * 2), (C128,)),
        ("abs complex128", lambda x: x.abs(), (C128,)),
        ("matmul complex128", lambda a: a @ a.mT, (C128,)),
        ("var float64", lambda x: torch.var_mean(x, 1), (X64,)),
        ("max float64", lambda x: x.max(1), (X64,)),
    ],
)
def test_result_dtype_and_shape_equal_cpu(name, fn, inputs):
    _both(fn, *inputs)


def test_least_squares_float64():
    a = torch.randn(6, 3, dtype=torch.float64, generator=g)
    b = torch.randn(6, 2, dtype=torch.float64, generator=g)
    cpu = torch.linalg.lstsq(a, b)
    dev = torch.linalg.lstsq(a.to(DEV), b.to(DEV))
    assert dev.solution.dtype == torch.float64 and dev.solution.shape == cpu.solution.shape
    torch.testing.assert_close(dev.solution.cpu(), cpu.solution, atol=1e-4, rtol=1e-4)


def test_type_promotion_equals_cpu():
    f32 = torch.randn(5, generator=g)
    s64 = torch.tensor(2.5, dtype=torch.float64)
    # a 0-dim float64 neuron tensor does not promote a float32 tensor (no doubled memory)
    assert (f32.to(DEV) * s64.to(DEV)).dtype == (f32 * s64).dtype == torch.float32
    assert (f32.to(DEV) + s64).dtype == torch.float32
    # but it does promote an integer tensor
    i = torch.arange(5)
    assert (i.to(DEV) * s64.to(DEV)).dtype == (i * s64).dtype == torch.float64
    c = torch.tensor(1 + 2j, dtype=torch.complex128)
    assert (f32.to(DEV) * c.to(DEV)).dtype == (f32 * c).dtype == torch.complex64
    _both(lambda a, b: a * b, f32, s64)


def test_float64_arithmetic_has_float32_precision():
    x = torch.tensor([1.0, 1e-9, 3e38, 1e300], dtype=torch.float64)
    y = (x.to(DEV) + 1.0).cpu()
    assert y.dtype == torch.float64
    assert y[0].item() == 2.0 and y[1].item() == 1.0  # 1 + 1e-9 rounds to 1 in float32
    assert y.tolist()[3] == float("inf")  # beyond float32's range, as on the device
    # every result is a float32 value, in-place and out= results too
    z = torch.randn(7, dtype=torch.float64, generator=g).to(DEV)
    z.mul_(1.1)
    out = torch.empty(7, dtype=torch.float64, device=DEV)
    torch.exp(z, out=out)
    for t in (z, out):
        assert torch.equal(t.cpu(), t.cpu().float().double())
    # complex128 likewise
    c = (C128.to(DEV) * 1.1).cpu()
    assert torch.equal(c, c.to(torch.complex64).to(torch.complex128))


def test_float64_gradients_keep_dtype():
    for dt in (torch.float64, torch.complex128):
        x = torch.randn(3, 4, dtype=dt, generator=g)
        xc = x.clone().requires_grad_()
        xd = x.to(DEV).requires_grad_()
        for t in (xc, xd):
            (t.exp() * 3).abs().sum().backward()
        assert xd.grad.dtype == dt and xd.grad.shape == xc.grad.shape
        torch.testing.assert_close(xd.grad.cpu(), xc.grad, atol=1e-4, rtol=1e-5)


# --- argument validation: what CPU rejects, neuron rejects ------------------------------------


def _f(*shape, dtype=torch.float32, device="cpu"):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(1)).to(dtype).to(device)


VALIDATION = {
    "lerp mixed dtypes": lambda d: torch.lerp(
        _f(3, device=d), _f(3, dtype=torch.float64, device=d), 0.5
    ),
    "lerp out dtype": lambda d: torch.lerp(
        _f(3, device=d), _f(3, device=d), 0.5, out=_f(3, dtype=torch.float64, device=d)
    ),
    "floor out int": lambda d: torch.floor(
        _f(3, device=d), out=torch.empty(3, dtype=torch.long, device=d)
    ),
    "ceil out int": lambda d: torch.ceil(
        _f(3, device=d), out=torch.empty(3, dtype=torch.int, device=d)
    ),
    "frexp mantissa dtype": lambda d: torch.frexp(
        _f(3, device=d),
        out=(
            torch.empty(3, dtype=torch.float64, device=d),
            torch.empty(3, dtype=torch.int, device=d),
        ),
    ),
    "mode values dtype": lambda d: torch.mode(
        _f(3, device=d),
        out=(
            torch.empty(0, dtype=torch.float64, device=d),
            torch.empty(0, dtype=torch.long, device=d),
        ),
    ),
    "complex mixed dtypes": lambda d: torch.complex(
        _f(3, device=d), _f(3, dtype=torch.float64, device=d)
    ),
    "complex out dtype": lambda d: torch.complex(
        _f(3, device=d), _f(3, device=d), out=torch.empty(3, dtype=torch.complex128, device=d)
    ),
}


@pytest.mark.parametrize("name", sorted(VALIDATION))
def test_validation_equals_cpu(name):
    fn = VALIDATION[name]
    try:
        fn("cpu")
        cpu_raised = None
    except RuntimeError as e:
        cpu_raised = e
    if cpu_raised is None:
        fn(DEV)  # accepted on CPU: accepted on neuron
        return
    with pytest.raises(RuntimeError):
        fn(DEV)


@pytest.mark.parametrize(
    "call",
    [
        lambda a, o: torch.add(a, a, out=o),
        lambda a, o: torch.sum(a, 0, out=o),
        lambda a, o: torch.floor(a, out=o),
        lambda a, o: o.add_(a.sum()),
    ],
)
def test_cpu_scalar_out_is_an_error(call):
    """A 0-dim CPU tensor may be read by an op on neuron tensors, never written (as on CUDA)."""
    a = _f(3, device=DEV)
    o = torch.tensor(0.0)
    with pytest.raises(RuntimeError, match="same device"):
        call(a, o)
    assert o.shape == () and o.item() == 0.0
    # reading a CPU scalar stays allowed
    assert (a * torch.tensor(2.0)).device.type == DEV


# --- quantized tensors: a clear, documented error --------------------------------------------


def test_quantized_tensors_are_refused():
    x = _f(4, device=DEV)
    with pytest.raises(NotImplementedError, match="quantized tensors are not supported on neuron"):
        torch.quantize_per_tensor(x, 0.1, 0, torch.quint8)
    with pytest.raises(NotImplementedError, match="[Qq]uantized"):
        torch._empty_affine_quantized([2], scale=0.1, zero_point=0, dtype=torch.quint8, device=DEV)
    q = torch.quantize_per_tensor(_f(4), 0.1, 0, torch.quint8)
    with pytest.raises((NotImplementedError, RuntimeError), match="[Qq]uantized"):
        q.to(DEV)
    for op in ("aten::quantize_per_tensor", "aten::_empty_affine_quantized"):
        assert op_policy.policy_for(op)[0] == op_policy.UNSUPPORTED


# --- 64-bit limits do not leak from the 32-bit policy ----------------------------------------


def test_randperm_float64_beyond_float32_integers():
    """float64 holds every integer up to 2^53: randperm into a float64 out= tensor accepts n
    above float32's 2^24 (PyTorch's test_randperm), and rejects what CPU rejects."""
    n = 2**24 + 3
    res = torch.empty(0, dtype=torch.float64, device=DEV)
    torch.randperm(n, out=res)
    c = res.cpu()
    assert c.shape == (n,) and c.max().item() == n - 1 and c.min().item() == 0
    assert c.sum().item() == n * (n - 1) // 2  # exact in float64: no value was rounded
    with pytest.raises(RuntimeError):
        torch.randperm(2**53 + 2, out=res)
    small = torch.empty(0, dtype=torch.float32, device=DEV)
    with pytest.raises(RuntimeError):
        torch.randperm(2**24 + 2, out=small)  # CPU's float32 limit holds too


def test_uniform_beyond_float32_range():
    t = torch.empty(1000, dtype=torch.float64, device=DEV).uniform_(-1e300, 1e300)
    c = t.cpu()
    assert torch.isfinite(c).all() and c.abs().max() > 1e299 and c.abs().max() <= 1e300
    n = torch.empty(100, dtype=torch.float64, device=DEV).normal_(0, 1e200).cpu()
    assert torch.isfinite(n).all() and n.abs().max() > 1e199
