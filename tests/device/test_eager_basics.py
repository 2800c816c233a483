"""Enough eager execution to exercise the device (issue 2, point 10), compared with CPU.

Eager kernels run the CPU kernels on device memory, so results are bit-identical to CPU
(README, "What the emulation is"): comparisons are exact."""

import pytest
import torch

DEV = "neuron"


def both(fn, *tensors):
    cpu = fn(*tensors)
    dev = fn(*[t.to(DEV) for t in tensors])
    return cpu, dev


@pytest.mark.parametrize(
    "fn",
    [
        lambda a, b: a + b,
        lambda a, b: a * b - b / (a.abs() + 1),
        lambda a, b: a @ b.T,
        lambda a, b: torch.addmm(a[:, :3], a, b.T[:, :3]),
        lambda a, b: a.sum(0),
        lambda a, b: a.mean(),
        lambda a, b: a.max(dim=1).values,
        lambda a, b: torch.softmax(a, -1),
        lambda a, b: a.t().contiguous(),
        lambda a, b: a.clone().fill_(3.0),
        lambda a, b: torch.cat([a, b]),
        lambda a, b: a[::2, 1:],
        lambda a, b: torch.zeros_like(a).copy_(b),
        lambda a, b: a.cumsum(1),
        lambda a, b: (a > b).sum(),
    ],
)
def test_ops_match_cpu(fn):
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(5, 5, generator=g), torch.randn(5, 5, generator=g)
    cpu, dev = both(fn, a, b)
    assert dev.device.type == "neuron"
    torch.testing.assert_close(dev.cpu(), cpu, rtol=0, atol=0)


def test_inplace_returns_same_tensor():
    x = torch.ones(3, device=DEV)
    assert x.add_(1) is x
    out = torch.empty(3, device=DEV)
    assert torch.mul(x, 2, out=out) is out


def test_out_resizes():
    x = torch.randn(4, 6, device=DEV)
    out = torch.empty(0, device=DEV)
    torch.sum(x, 1, out=out)
    assert out.shape == (4,)
    torch.testing.assert_close(out.cpu(), x.cpu().sum(1), rtol=0, atol=0)


def test_mlp_autograd_matches_cpu():
    grads = {}
    for dev in ("cpu", DEV):
        torch.manual_seed(0)
        model = torch.nn.Sequential(
            torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3)
        ).to(dev)
        x = torch.randn(10, 8).to(dev)
        y = torch.randint(0, 3, (10,)).to(dev)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        grads[dev] = [p.grad.cpu() for p in model.parameters()] + [loss.detach().cpu()]
    for c, n in zip(grads["cpu"], grads[DEV], strict=True):
        torch.testing.assert_close(n, c, rtol=0, atol=0)


def test_float64_policy_warns_and_computes_in_float32(py):
    # float64 result dtype, one warning per process, and float32 precision (1 + 1e-9 == 1).
    py("""
        import warnings, torch
        x = torch.tensor([1.0, 1e-9], dtype=torch.float64, device='neuron')
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter('always')
            y = x + 1.0
            z = x * 3.0
        msgs = [str(m.message) for m in w if 'float64' in str(m.message)]
        assert y.dtype == torch.float64 and z.dtype == torch.float64
        assert len(msgs) == 1, msgs
        assert y.cpu()[1].item() == 1.0
        """)


def test_printing_is_a_host_read():
    x = torch.arange(3.0, device=DEV)
    assert "device='neuron:0'" in repr(x) and "0., 1., 2." in repr(x)
