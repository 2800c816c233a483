"""An op the eager policy does not list (eager runs it by CPU fallback) compiles when the
decomposition table replaces it with native ops: on TorchNeuron a compiled graph is lowered
after AOTAutograd's decompositions. ``x.unfold`` with overlapping windows needs
``aten::unfold_backward`` in the backward graph; Inductor decomposes it into ``index_put``,
``unfold`` and views. Before, the legality pass checked the dispatched op only and every
compiled training step of such a model failed (issue 26: timm's halonet_h1)."""

from __future__ import annotations

import pytest
import torch
from torch._dynamo.exc import BackendCompilerFailed

from torch_neuronx.compile import (
    NeuronCompileError,
    get_dynamo_metrics,
    legality,
    reset_dynamo_metrics,
)
from torch_neuronx.eager import op_policy


class _Windows(torch.nn.Module):
    """Overlapping windows (size 3, step 2) of the last dimension, then a linear layer."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(3, 4)

    def forward(self, x):
        return self.proj(torch.sin(x).unfold(-1, 3, 2)).square().mean()


def _train(model, x, steps, compiled):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    step = torch.compile(model, backend="neuron") if compiled else model
    losses, grads = [], None
    for _ in range(steps):
        opt.zero_grad()
        x.grad = None
        loss = step(x)
        loss.backward()
        losses.append(loss.detach().cpu())
        grads = [x.grad.cpu()] + [p.grad.cpu() for p in model.parameters()]
        opt.step()
    return torch.stack(losses), grads


def _data():
    torch.manual_seed(0)
    return _Windows(), torch.randn(2, 5, 9)


def test_policy_does_not_list_unfold_backward():
    # the premise: eager runs it by CPU fallback (otherwise this file tests nothing)
    status, reason = legality.policy_status("aten::unfold_backward")
    assert (status, reason) == ("fallback", op_policy.DEFAULT_FALLBACK_REASON)


def test_unfold_trains_compiled_like_cpu(device):
    model, x = _data()
    ref_losses, ref_grads = _train(model, x.clone().requires_grad_(), 3, compiled=False)
    model, x = _data()
    losses, grads = _train(model.to(device), x.to(device).requires_grad_(), 3, compiled=True)
    torch.testing.assert_close(losses, ref_losses)
    for got, want in zip(grads, ref_grads, strict=True):
        torch.testing.assert_close(got, want)
    (rec,) = get_dynamo_metrics()
    assert rec["cache"] != "fallback"
    assert rec["through_decomposition"] == ["aten::unfold_backward"]


def test_through_decomposition_is_reported_on_an_aot_cache_hit(device):
    records = []
    for _ in range(2):
        torch._dynamo.reset()
        reset_dynamo_metrics()
        model, x = _data()
        _train(model.to(device), x.to(device).requires_grad_(), 1, compiled=True)
        (rec,) = get_dynamo_metrics()
        records.append(rec)
    assert records[1]["aot_cache"] == "hit", records[1]
    assert [r["through_decomposition"] for r in records] == [["aten::unfold_backward"]] * 2


def test_decomposition_into_a_non_native_op_stays_illegal(device, monkeypatch):
    """The decomposition's own nodes must be legal: with ``index_put`` (which the
    decomposition of unfold_backward needs) made a fallback, the graph is refused, naming
    both ops."""
    real = legality._load_policy()

    def policy(name):
        if name.startswith("aten::index_put"):
            return ("fallback", "injected for the test")
        return real(name)

    monkeypatch.setattr(legality, "_load_policy", lambda: policy)
    model, x = _data()
    step = torch.compile(model.to(device), backend="neuron")
    with pytest.raises(BackendCompilerFailed) as info:
        step(x.to(device).requires_grad_()).backward()
    inner = info.value.inner_exception
    assert isinstance(inner, NeuronCompileError), repr(inner)
    msg = str(inner)
    assert "aten::unfold_backward: policy 'fallback'" in msg
    assert "its decomposition needs aten::index_put" in msg


def test_explicitly_listed_fallback_is_not_compiled_through_its_decomposition(monkeypatch):
    """An op the policy lists (TorchNeuron's host linalg, say) stays illegal even where the
    table decomposes it: the listing is the table's decision."""
    real = legality._load_policy()

    def policy(name):
        if name == "aten::unfold_backward":
            return ("fallback", "listed for the test")
        return real(name)

    monkeypatch.setattr(legality, "_load_policy", lambda: policy)
    gm = torch.fx.GraphModule(torch.nn.Module(), torch.fx.Graph())
    x = gm.graph.placeholder("x")
    node = gm.graph.call_function(torch.ops.aten.view.default, (x, [-1]))
    node.meta["custom"] = {legality.DECOMPOSED_FROM: "aten::unfold_backward"}
    gm.graph.output(node)
    result = legality.check_graph(gm)
    assert [i.op for i in result.illegal] == ["aten::unfold_backward"]
    assert result.through_decomposition == []
    monkeypatch.setattr(legality, "_load_policy", lambda: real)
    result = legality.check_graph(gm)
    assert result.illegal == [] and result.through_decomposition == ["aten::unfold_backward"]
