"""Kernels written in Python (torch_neuronx/eager/python_kernels.py) stay out of Dynamo.

Dynamo leaves nn.LSTM/GRU/RNN out of its graphs and runs them eagerly inside a compiled
function; their neuron kernels are Python, and Dynamo compiled those kernels' frames into graphs
of their own (a GRU's fused cell became a graph; the LSTM kernel a graph the backend could not
run). Each graph a backend receives is recorded: none may hold code of torch_neuronx."""

import pytest
import torch


@pytest.mark.parametrize("cls", [torch.nn.LSTM, torch.nn.GRU])
def test_rnn_kernels_run_eagerly_under_compile(cls):
    graphs = []

    def recording_backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    torch._dynamo.reset()
    module = cls(6, 8).to("neuron")
    ref = cls(6, 8)
    ref.load_state_dict(module.state_dict())
    x = torch.randn(3, 2, 6)
    out = torch.compile(module, backend=recording_backend)(x.to("neuron"))[0]
    traces = [n.meta.get("stack_trace") or "" for g in graphs for n in g.graph.nodes]
    assert not [t for t in traces if "torch_neuronx" in t]
    torch.testing.assert_close(out.cpu(), ref(x)[0], atol=1e-5, rtol=1e-5)
