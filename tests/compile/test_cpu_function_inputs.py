"""CPU arguments of compiled *functions* mixed with neuron tensors in one op (issue 4, rule
3): copied to neuron before the compiled region, in every way of asking for the backend;
with TORCH_NEURONX_DYNAMO_DISABLE_CPU_AUTOCOPY=1 an error naming the argument's position."""

import pytest
import torch
from torch._dynamo.exc import TorchRuntimeError

from torch_neuronx.compile import NeuronCompileError


def _weights():
    return torch.randn(4, 3, generator=torch.Generator().manual_seed(0))


def _mix(x, w):
    return torch.relu(x @ w) + 1  # x is a CPU tensor, w a neuron tensor: one op mixes them


def _check(out, x, w):
    assert out.device.type == "neuron"
    torch.testing.assert_close(out.cpu(), _mix(x, w.cpu()), rtol=1e-5, atol=1e-6)


def test_plain_function():
    x, w = torch.randn(2, 4), _weights().to("neuron")
    _check(torch.compile(_mix, backend="neuron")(x, w), x, w)
    assert x.device.type == "cpu"


def test_keyword_argument_and_closure():
    w = _weights().to("neuron")

    def f(x, *, bias):
        return x @ w + bias  # closure over a neuron tensor

    x, b = torch.randn(2, 4), torch.randn(3)
    out = torch.compile(f, backend="neuron")(x, bias=b)
    assert out.device.type == "neuron"
    torch.testing.assert_close(out.cpu(), x @ w.cpu() + b, rtol=1e-5, atol=1e-6)


def test_decorator_form():
    @torch.compile(backend="neuron")
    def g(x, w):
        return _mix(x, w)

    x, w = torch.randn(2, 4), _weights().to("neuron")
    _check(g(x, w), x, w)


def test_default_backend():
    prev = torch.compiler.get_default_backend()
    torch.compiler.set_default_backend("neuron")
    try:
        x, w = torch.randn(2, 4), _weights().to("neuron")
        _check(torch.compile(_mix)(x, w), x, w)
    finally:
        torch.compiler.set_default_backend(prev)


def test_in_place_update_of_a_cpu_argument_is_written_back():
    w = _weights().to("neuron")

    def f(x):
        x.mul_(2)
        return x @ w

    x = torch.ones(2, 4)
    out = torch.compile(f, backend="neuron")(x)
    torch.testing.assert_close(x, torch.full((2, 4), 2.0))
    torch.testing.assert_close(out.cpu(), x @ w.cpu(), rtol=1e-5, atol=1e-6)


def test_disabled_autocopy_names_the_position(monkeypatch):
    monkeypatch.setenv("TORCH_NEURONX_DYNAMO_DISABLE_CPU_AUTOCOPY", "1")
    x, w = torch.randn(2, 4), _weights().to("neuron")
    with pytest.raises(NeuronCompileError, match=r"input 0 \(argument 'x'\) is a CPU tensor"):
        torch.compile(_mix, backend="neuron")(x, w)
    with pytest.raises(NeuronCompileError, match=r"input 1 \(argument 'w'\) is a CPU tensor"):
        torch.compile(_mix, backend="neuron")(x.to("neuron"), w.cpu())


def test_disabled_autocopy_names_the_position_for_modules(monkeypatch):
    monkeypatch.setenv("TORCH_NEURONX_DYNAMO_DISABLE_CPU_AUTOCOPY", "1")
    m = torch.nn.Linear(4, 3).to("neuron")
    with pytest.raises(NeuronCompileError, match=r"input 0 \(argument 'input'\) is a CPU tensor"):
        torch.compile(m, backend="neuron")(torch.randn(2, 4))


def test_other_backends_are_untouched():
    # No autocopy outside backend="neuron": Dynamo's own device check refuses the mix, as
    # eager PyTorch does.
    x, w = torch.randn(2, 4), _weights().to("neuron")
    with pytest.raises(
        TorchRuntimeError,
        match="Expected all tensors to be on the same device, "
        "but found at least two devices, cpu and neuron:0",
    ):
        torch.compile(_mix, backend="eager")(x, w)
