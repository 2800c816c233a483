"""Random ops on neuron, checked statistically and for reproducibility.

The OpInfo sweep (test_opinfo.py) compares random ops against CPU on structure, dtype,
shape and device only, because a device generator need not reproduce the CPU stream.
Here their distributions are checked: sample moments within ~6 standard errors
(deterministic: every test seeds first), supports/bounds, and reproducibility under
``torch.manual_seed`` and generator state save/restore.

``TORCH_NEURONX_OPINFO_DEVICE=cpu`` runs the same checks on CPU (self-check).
"""

from __future__ import annotations

import math

import pytest
import torch

from torch_neuronx.testing.opinfo import device_under_test

DEVICE = device_under_test()

N = 200_000


def _host(t):
    assert t.device.type == torch.device(DEVICE).type, f"result on {t.device}, not {DEVICE}"
    return t.detach().cpu().double()


def _check_moments(x, mean, var, n=None, k=6.0):
    """Sample mean and variance within k standard errors of the true ones."""
    n = n or x.numel()
    m = x.mean().item()
    v = x.var().item()
    se_mean = math.sqrt(var / n)
    assert abs(m - mean) <= k * se_mean + 1e-12, f"mean {m} vs {mean} (se {se_mean})"
    # var of the sample variance ~ 2 var^2 / n for light tails; allow generous slack
    se_var = math.sqrt(2.0 * var * var / n) * 3
    assert abs(v - var) <= k * se_var + 1e-12, f"var {v} vs {var} (se {se_var})"


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(1234)
    yield


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_randn(dtype):
    x = torch.randn(N, device=DEVICE, dtype=dtype)
    assert x.dtype == dtype and x.shape == (N,)
    _check_moments(_host(x), 0.0, 1.0, k=6.0 if dtype == torch.float32 else 12.0)
    # tails: ~0.27% beyond 3 sigma
    frac = (_host(x).abs() > 3).double().mean().item()
    assert 0.001 < frac < 0.005


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_rand(dtype):
    x = torch.rand(N, device=DEVICE, dtype=dtype)
    h = _host(x)
    assert x.dtype == dtype
    assert h.min().item() >= 0.0 and h.max().item() <= 1.0
    if dtype == torch.float32:
        assert h.max().item() < 1.0
    _check_moments(h, 0.5, 1.0 / 12.0, k=6.0 if dtype == torch.float32 else 12.0)
    hist = torch.histc(h.float(), bins=10, min=0, max=1) / N
    assert (hist - 0.1).abs().max().item() < 0.01


def test_uniform_normal_inplace():
    x = torch.empty(N, device=DEVICE).uniform_(-2.0, 3.0)
    h = _host(x)
    assert h.min().item() >= -2.0 and h.max().item() <= 3.0
    _check_moments(h, 0.5, 25.0 / 12.0)
    y = torch.empty(N, device=DEVICE).normal_(3.0, 0.5)
    _check_moments(_host(y), 3.0, 0.25)
    z = torch.normal(torch.full((N,), -1.0, device=DEVICE), 2.0)
    _check_moments(_host(z), -1.0, 4.0)


def test_exponential_and_friends():
    x = torch.empty(N, device=DEVICE).exponential_(2.0)
    h = _host(x)
    assert h.min().item() >= 0.0
    _check_moments(h, 0.5, 0.25, k=8.0)
    g = torch.empty(N, device=DEVICE).geometric_(0.25)
    hg = _host(g)
    assert hg.min().item() >= 1.0 and torch.equal(hg, hg.round())
    assert abs(hg.mean().item() - 4.0) < 0.1
    ln = torch.empty(N, device=DEVICE).log_normal_(0.0, 0.25)
    assert abs(_host(ln).log().mean().item()) < 0.01


def test_randint_and_randperm():
    x = torch.randint(-3, 7, (N,), device=DEVICE)
    assert x.dtype == torch.int64
    h = x.cpu()
    assert h.min().item() == -3 and h.max().item() == 6
    counts = torch.bincount(h + 3, minlength=10).double() / N
    assert (counts - 0.1).abs().max().item() < 0.01
    p = torch.randperm(1000, device=DEVICE)
    assert p.dtype == torch.int64 and p.device.type == torch.device(DEVICE).type
    assert torch.equal(p.cpu().sort().values, torch.arange(1000))
    assert not torch.equal(p.cpu(), torch.arange(1000))


@pytest.mark.parametrize("p", [0.0, 0.3, 1.0])
def test_bernoulli(p):
    probs = torch.full((N,), p, device=DEVICE)
    x = torch.bernoulli(probs)
    h = _host(x)
    assert set(h.unique().tolist()) <= {0.0, 1.0}
    assert abs(h.mean().item() - p) <= 6 * math.sqrt(max(p * (1 - p), 1e-12) / N) + 1e-12
    y = torch.empty(N, device=DEVICE).bernoulli_(0.7)
    assert abs(_host(y).mean().item() - 0.7) < 0.01


@pytest.mark.parametrize("p", [0.1, 0.5])
def test_dropout(p):
    x = torch.ones(N, device=DEVICE)
    y = torch.nn.functional.dropout(x, p=p, training=True)
    h = _host(y)
    scale = 1.0 / (1.0 - p)
    assert torch.all((h == 0) | ((h - scale).abs() < 1e-5))
    zero_frac = (h == 0).double().mean().item()
    assert abs(zero_frac - p) <= 6 * math.sqrt(p * (1 - p) / N)
    # eval mode is the identity
    assert torch.equal(_host(torch.nn.functional.dropout(x, p=p, training=False)), _host(x))
    # gradient flows through the same mask
    xr = torch.ones(1000, device=DEVICE, requires_grad=True)
    yr = torch.nn.functional.dropout(xr, p=p, training=True)
    yr.sum().backward()
    # both are 1 * mask * scale: the same mask gives the same bits
    assert torch.equal(_host(xr.grad), _host(yr))


def test_multinomial():
    w = torch.tensor([1.0, 2.0, 3.0, 4.0], device=DEVICE)
    s = torch.multinomial(w, 40_000, replacement=True)
    assert s.dtype == torch.int64 and s.device.type == torch.device(DEVICE).type
    freq = torch.bincount(s.cpu(), minlength=4).double() / 40_000
    torch.testing.assert_close(
        freq, torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=torch.float64), atol=0.015, rtol=0
    )
    nr = torch.multinomial(w, 4, replacement=False).cpu()
    assert sorted(nr.tolist()) == [0, 1, 2, 3]


def _draw():
    return [
        torch.randn(64, device=DEVICE).cpu(),
        torch.rand(64, device=DEVICE).cpu(),
        torch.randint(0, 100, (64,), device=DEVICE).cpu(),
        torch.nn.functional.dropout(torch.ones(64, device=DEVICE), 0.5).cpu(),
    ]


def test_manual_seed_reproducible():
    torch.manual_seed(7)
    a = _draw()
    torch.manual_seed(7)
    b = _draw()
    for x, y in zip(a, b, strict=True):
        assert torch.equal(x, y)
    torch.manual_seed(8)
    c = _draw()
    assert not torch.equal(a[0], c[0])


def test_successive_draws_differ():
    x = torch.randn(1000, device=DEVICE).cpu()
    y = torch.randn(1000, device=DEVICE).cpu()
    assert not torch.equal(x, y)
    # no pathological correlation between consecutive draws
    corr = torch.corrcoef(torch.stack([x, y]))[0, 1].abs().item()
    assert corr < 0.15


def test_rng_state_roundtrip():
    dev = torch.device(DEVICE)
    mod = torch.cpu if dev.type == "cpu" else getattr(torch, dev.type, None)
    get_state = getattr(mod, "get_rng_state", None) if mod is not None else None
    if dev.type == "cpu":
        get_state, set_state = torch.get_rng_state, torch.set_rng_state
    else:
        assert get_state is not None, f"torch.{dev.type}.get_rng_state is missing"
        set_state = mod.set_rng_state
    state = get_state()
    a = torch.randn(100, device=DEVICE).cpu()
    set_state(state)
    b = torch.randn(100, device=DEVICE).cpu()
    assert torch.equal(a, b)


def test_explicit_generator():
    g1 = torch.Generator(device=DEVICE).manual_seed(99)
    g2 = torch.Generator(device=DEVICE).manual_seed(99)
    a = torch.randn(100, device=DEVICE, generator=g1).cpu()
    b = torch.randn(100, device=DEVICE, generator=g2).cpu()
    assert torch.equal(a, b)
    # the default generator is untouched by explicit-generator draws
    torch.manual_seed(5)
    x = torch.randn(10, device=DEVICE).cpu()
    torch.manual_seed(5)
    torch.randn(10, device=DEVICE, generator=g1)
    y = torch.randn(10, device=DEVICE).cpu()
    assert torch.equal(x, y)
