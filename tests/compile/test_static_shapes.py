"""Static shapes (TorchNeuron's rule): a function compiled with backend="neuron" compiles each
input shape once. Shapes A, B, A give two graphs and two metrics records, whether
``dynamic`` is left unset or passed as False; going back to a shape seen before never
compiles again. Functions and modules, inference and training. Other backends keep
Dynamo's own default (automatic dynamic shapes)."""

from __future__ import annotations

import pytest
import torch

from torch_neuronx.compile import get_dynamo_metrics, get_graph_counts

DYNAMIC = [
    pytest.param({}, id="dynamic-unset"),
    pytest.param({"dynamic": False}, id="dynamic-False"),
]


def _affine(x, w):
    return torch.tanh(x @ w) * 2 + 1


def _tensor_shapes(record):
    """The shapes of a record's tensor inputs (a symbolic graph would add int inputs)."""
    return [s for s in record["input_shapes"] if isinstance(s, tuple)]


def _assert_static_records(n_graphs: int):
    records = get_dynamo_metrics()
    assert len(records) == n_graphs, [r["input_shapes"] for r in records]
    for r in records:
        # every graph was compiled for concrete shapes: no SymInt (int) graph inputs
        assert all(isinstance(s, tuple) for s in r["input_shapes"]), r["input_shapes"]
    assert list(get_graph_counts().values()) == [n_graphs]
    assert sorted(r["graph_index"] for r in records) == list(range(1, n_graphs + 1))
    return records


@pytest.mark.parametrize("kwargs", DYNAMIC)
def test_function_shapes_a_b_a_compile_two_graphs(device, kwargs):
    f = torch.compile(_affine, backend="neuron", **kwargs)
    w = torch.randn(4, 3)
    for rows in (2, 5, 2, 5, 2):
        x = torch.randn(rows, 4)
        got = f(x.to(device), w.to(device))
        torch.testing.assert_close(got.cpu(), _affine(x, w), rtol=1e-5, atol=1e-6)
    records = _assert_static_records(2)
    assert [_tensor_shapes(r)[0] for r in records] == [(2, 4), (5, 4)]


def test_three_shapes_revisited_in_any_order_compile_three_graphs(device):
    f = torch.compile(_affine, backend="neuron")
    w = torch.randn(4, 3, device=device)
    for rows in (1, 2, 3, 3, 1, 2, 1, 3):
        f(torch.randn(rows, 4, device=device), w)
    _assert_static_records(3)


def test_decorator_and_default_backend_are_static_too(device):
    @torch.compile(backend="neuron")
    def g(x):
        return x.sin() + x

    for n in (3, 4, 3):
        x = torch.randn(n)
        torch.testing.assert_close(g(x.to(device)).cpu(), x.sin() + x)
    _assert_static_records(2)

    torch._dynamo.reset()
    from torch_neuronx.compile import reset_dynamo_metrics

    reset_dynamo_metrics()
    old = torch.compiler.get_default_backend()
    torch.compiler.set_default_backend("neuron")
    try:
        h = torch.compile(lambda x: x.cos() * 3)
        for n in (3, 4, 3):
            x = torch.randn(n)
            torch.testing.assert_close(h(x.to(device)).cpu(), x.cos() * 3)
    finally:
        torch.compiler.set_default_backend(old)
    _assert_static_records(2)


class _MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(6, 8)
        self.fc2 = torch.nn.Linear(8, 2)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


@pytest.mark.parametrize("kwargs", DYNAMIC)
def test_module_inference_shapes_a_b_a(device, kwargs):
    torch.manual_seed(0)
    ref = _MLP().eval()
    model = _MLP().eval()
    model.load_state_dict(ref.state_dict())
    compiled = torch.compile(model.to(device), backend="neuron", **kwargs)
    with torch.no_grad():
        for batch in (4, 7, 4):
            x = torch.randn(batch, 6)
            torch.testing.assert_close(compiled(x.to(device)).cpu(), ref(x), rtol=1e-5, atol=1e-6)
    _assert_static_records(2)


def test_module_compile_in_place_is_static(device):
    """nn.Module.compile(backend="neuron") goes through torch.compile as well."""
    torch.manual_seed(0)
    ref = _MLP()
    model = _MLP()
    model.load_state_dict(ref.state_dict())
    model.to(device).compile(backend="neuron")
    with torch.no_grad():
        for batch in (3, 5, 3):
            x = torch.randn(batch, 6)
            torch.testing.assert_close(model(x.to(device)).cpu(), ref(x), rtol=1e-5, atol=1e-6)
    _assert_static_records(2)


@pytest.mark.parametrize("kwargs", DYNAMIC)
def test_module_training_shapes_a_b_a(device, kwargs):
    """Forward and backward compiled per shape (one record holds both graphs); gradients
    equal eager CPU's at every step."""
    torch.manual_seed(0)
    ref = _MLP()
    model = _MLP()
    model.load_state_dict(ref.state_dict())
    compiled = torch.compile(model.to(device), backend="neuron", **kwargs)
    for batch in (4, 6, 4):
        x, y = torch.randn(batch, 6), torch.randn(batch, 2)
        model.zero_grad(set_to_none=True)
        ref.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(compiled(x.to(device)), y.to(device))
        loss.backward()
        ref_loss = torch.nn.functional.mse_loss(ref(x), y)
        ref_loss.backward()
        torch.testing.assert_close(loss.cpu(), ref_loss, rtol=1e-5, atol=1e-6)
        for (name, p), (_, q) in zip(model.named_parameters(), ref.named_parameters()):
            torch.testing.assert_close(p.grad.cpu(), q.grad, rtol=1e-5, atol=1e-6, msg=name)
    records = _assert_static_records(2)
    assert all(r["bw_node_count"] for r in records)  # each shape has its backward graph


def test_function_training_shapes_a_b_a(device):
    f = torch.compile(_affine, backend="neuron")
    w_cpu = torch.randn(4, 3, requires_grad=True)
    w = w_cpu.detach().to(device).requires_grad_(True)
    for rows in (2, 3, 2):
        x = torch.randn(rows, 4)
        w.grad = None
        w_cpu.grad = None
        f(x.to(device), w).sum().backward()
        _affine(x, w_cpu).sum().backward()
        torch.testing.assert_close(w.grad.cpu(), w_cpu.grad, rtol=1e-5, atol=1e-6)
    _assert_static_records(2)


def test_other_backends_keep_dynamos_automatic_dynamic_shapes():
    """CPU-only users' torch.compile is unchanged: for any other backend the second shape
    still produces Dynamo's symbolic (automatic dynamic) graph."""
    graphs = []

    def counting_backend(gm, example_inputs):
        graphs.append([type(x).__name__ for x in example_inputs])
        return gm.forward

    f = torch.compile(lambda x: x * 2, backend=counting_backend)
    for n in (2, 3, 2):
        torch.testing.assert_close(f(torch.ones(n)), torch.full((n,), 2.0))
    assert len(graphs) == 2
    assert "SymInt" in graphs[1], graphs  # the recompile was symbolic: Dynamo's default


def test_symbolic_graph_from_mark_dynamic_still_compiles_each_shape_once(device, monkeypatch):
    """mark_dynamic makes Dynamo hand the backend a symbolic graph even with static shapes
    requested; the backend specialises it per concrete shape, once each (A, B, A: two)."""
    from torch_neuronx.compile import backend

    symbolic = []
    real_init = backend._ShapeSpecializingFunction.__init__

    def spy(self, *args, **kwargs):
        symbolic.append(True)
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(backend._ShapeSpecializingFunction, "__init__", spy)
    f = torch.compile(_affine, backend="neuron")
    w = torch.randn(4, 3)
    for rows in (2, 3, 2):
        x = torch.randn(rows, 4)
        xd = x.to(device)
        torch._dynamo.mark_dynamic(xd, 0)
        torch.testing.assert_close(f(xd, w.to(device)).cpu(), _affine(x, w), rtol=1e-5, atol=1e-6)
    records = get_dynamo_metrics()
    assert len(records) == 2, [r["input_shapes"] for r in records]
    assert [_tensor_shapes(r)[0] for r in records] == [(2, 4), (3, 4)]
    assert list(get_graph_counts().values()) == [2]
    assert symbolic == [True]  # one symbolic Dynamo graph, specialised twice
