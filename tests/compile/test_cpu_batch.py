"""A CPU batch fed to a compiled module whose parameters are on neuron (issue 4, rule 3)."""

import pytest
import torch

from torch_neuronx.compile import NeuronCompileError


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()).to("neuron")


def test_cpu_batch_is_copied_to_neuron():
    m = _model()
    c = torch.compile(m, backend="neuron")
    x = torch.randn(2, 4)
    y = c(x)
    assert y.device.type == "neuron"
    torch.testing.assert_close(y.cpu(), m(x.to("neuron")).cpu())
    assert x.device.type == "cpu"  # the caller's tensor is untouched


def test_cpu_batch_is_an_error_without_autocopy(monkeypatch):
    monkeypatch.setenv("TORCH_NEURONX_DYNAMO_DISABLE_CPU_AUTOCOPY", "1")
    torch._dynamo.reset()
    c = torch.compile(_model(), backend="neuron")
    with pytest.raises(
        NeuronCompileError,
        match=r"input 0 \(argument 'input'\) is a CPU tensor, "
        "and TORCH_NEURONX_DYNAMO_DISABLE_CPU_AUTOCOPY=1",
    ):
        c(torch.randn(2, 4))
