"""Input mutation, aliasing and placement behave as in eager."""

from __future__ import annotations

import torch

from torch_neuronx.compile import get_dynamo_metrics


def test_input_mutation_visible_to_caller(device):
    def f(x, y):
        x.add_(1)
        y.mul_(2)
        return x + y

    a = torch.arange(6.0, device=device).reshape(2, 3)
    b = torch.ones(2, 3, device=device)
    ea, eb = a.clone(), b.clone()
    out = torch.compile(f, backend="neuron")(a, b)
    ref = f(ea, eb)
    torch.testing.assert_close(out.cpu(), ref.cpu())
    torch.testing.assert_close(a.cpu(), ea.cpu())
    torch.testing.assert_close(b.cpu(), eb.cpu())


def test_mutation_through_view(device):
    def f(x):
        x[0].zero_()
        return x.sum()

    a = torch.arange(6.0, device=device).reshape(2, 3)
    ea = a.clone()
    out = torch.compile(f, backend="neuron")(a)
    torch.testing.assert_close(out.cpu(), f(ea).cpu())
    torch.testing.assert_close(a.cpu(), ea.cpu())


def test_output_aliases_input(device):
    def f(x):
        return x.view(-1), x.t(), x * 2

    a = torch.arange(6.0, device=device).reshape(2, 3)
    flat, tr, doubled = torch.compile(f, backend="neuron")(a)
    assert flat.device == a.device and tr.device == a.device and doubled.device == a.device
    # views share memory with the input, exactly as in eager
    assert flat.data_ptr() == a.data_ptr()
    assert tr.stride() == a.t().stride()
    a.add_(10)
    torch.testing.assert_close(flat.cpu(), a.view(-1).cpu())
    torch.testing.assert_close(tr.cpu(), a.t().cpu())
    torch.testing.assert_close(doubled.cpu(), (torch.arange(6.0).reshape(2, 3) * 2))


def test_inference_graph_and_no_grad(device):
    lin = torch.nn.Linear(4, 3).to(device)
    x = torch.randn(5, 4).to(device)
    compiled = torch.compile(lin, backend="neuron")
    with torch.no_grad():
        out = compiled(x)
        ref = lin(x)
    torch.testing.assert_close(out.cpu(), ref.cpu(), rtol=1e-5, atol=1e-6)
    rec = get_dynamo_metrics()[-1]
    assert rec["bw_node_count"] is None and rec["fw_node_count"] > 0
