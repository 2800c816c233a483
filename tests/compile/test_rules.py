"""TorchNeuron's torch.compile rules: static shapes, dynamic=True, mode, fullgraph, fallback
execution and CPU autocopy."""

from __future__ import annotations

import logging
import warnings

import pytest
import torch
from torch._dynamo.exc import BackendCompilerFailed, Unsupported

from torch_neuronx.compile import NeuronCompileError, get_dynamo_metrics, get_graph_counts, legality


def _double(x):
    return x * 2 + 1


def _compile_error(info) -> NeuronCompileError:
    """The backend's own error inside Dynamo's BackendCompilerFailed wrapper."""
    inner = info.value.inner_exception
    assert isinstance(inner, NeuronCompileError), repr(inner)
    return inner


def test_dynamic_true_is_rejected(device):
    f = torch.compile(_double, backend="neuron", dynamic=True)
    with pytest.raises(BackendCompilerFailed, match="does not support dynamic=True") as info:
        f(torch.ones(4, device=device))
    _compile_error(info)
    assert get_dynamo_metrics() == []


def test_each_new_shape_compiles_a_new_graph_and_warns(device, monkeypatch):
    monkeypatch.setenv("TORCH_NEURONX_DYNAMO_SHAPE_WARNING_THRESHOLD", "3")
    f = torch.compile(_double, backend="neuron")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in (2, 3, 5):
            x = torch.arange(float(n), device=device)
            torch.testing.assert_close(f(x).cpu(), (torch.arange(float(n)) * 2 + 1))
        f(torch.arange(3.0, device=device))  # seen shape: no new graph
    records = get_dynamo_metrics()
    # Dynamo switches to a symbolic graph on the second shape; the backend still compiles
    # one static graph per concrete shape (ints in input_shapes are the concrete sizes)
    shapes = [[s for s in r["input_shapes"] if isinstance(s, tuple)] for r in records]
    assert shapes == [[(2,)], [(3,)], [(5,)]]
    counts = get_graph_counts()
    assert len(counts) == 1 and list(counts.values()) == [3]
    assert records[-1]["graph_index"] == 3
    msgs = [str(w.message) for w in caught if "pad or bucket" in str(w.message).lower()]
    assert len(msgs) == 1 and "3 graphs" in msgs[0]


def test_non_default_mode_warns_and_runs_default(device, caplog):
    f = torch.compile(_double, backend="neuron", mode="max-autotune")
    with caplog.at_level(logging.WARNING, logger="torch_neuronx.compile"):
        out = f(torch.ones(3, device=device))
    torch.testing.assert_close(out.cpu(), torch.full((3,), 3.0))
    assert any(
        "mode='max-autotune'" in r.getMessage() and "default" in r.getMessage()
        for r in caplog.records
    )


def _with_break(x):
    y = x + 1
    torch._dynamo.graph_break()
    return y * 3


def test_fullgraph_turns_graph_breaks_into_errors(device):
    f = torch.compile(_with_break, backend="neuron", fullgraph=True)
    with pytest.raises(Unsupported, match=r"torch\._dynamo\.graph_break\(\)"):
        f(torch.ones(3, device=device))


def test_graph_break_compiles_each_piece(device):
    f = torch.compile(_with_break, backend="neuron")
    out = f(torch.ones(3, device=device))
    torch.testing.assert_close(out.cpu(), torch.full((3,), 6.0))
    assert len(get_dynamo_metrics()) == 2


# ----------------------------------------------------------------------- non-native ops


def _qr_then_add(x):
    q, r = torch.linalg.qr(x)
    return q + r


def test_real_policy_marks_linalg_qr_as_not_native():
    status, _ = legality.policy_status("aten::linalg_qr")
    assert status != "native"


def test_non_native_op_fails_by_default_naming_op_and_source_line(device, monkeypatch):
    monkeypatch.delenv("TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION", raising=False)
    f = torch.compile(_qr_then_add, backend="neuron")
    with pytest.raises(BackendCompilerFailed) as info:
        f(torch.randn(4, 4).to(device))
    msg = str(_compile_error(info))
    assert "aten::linalg_qr" in msg
    assert "test_rules.py" in msg and "torch.linalg.qr(x)" in msg  # the user's source line
    assert "fallback_execution" in msg
    assert get_dynamo_metrics() == []


@pytest.mark.parametrize("how", ["option", "env"])
def test_fallback_execution_runs_graph_eagerly(device, monkeypatch, how):
    kwargs = {}
    if how == "option":
        kwargs["options"] = {"fallback_execution": True}
    else:
        monkeypatch.setenv("TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION", "0")
    f = torch.compile(_qr_then_add, backend="neuron", **kwargs)
    x = torch.randn(4, 4, generator=torch.Generator().manual_seed(0)).to(device)
    out = f(x)
    torch.testing.assert_close(out.cpu(), _qr_then_add(x).cpu())
    (rec,) = get_dynamo_metrics()
    assert rec["cache"] == "fallback"


def test_option_overrides_environment(device, monkeypatch):
    monkeypatch.setenv("TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION", "0")
    f = torch.compile(_qr_then_add, backend="neuron", options={"fallback_execution": False})
    with pytest.raises(BackendCompilerFailed, match="aten::linalg_qr") as info:
        f(torch.randn(4, 4).to(device))
    _compile_error(info)


def test_policy_checked_on_backward_ops_too(device, monkeypatch):
    """An op only the backward graph needs is checked as well (policy injected)."""
    real = legality._load_policy()

    def policy(name):
        if name.startswith("aten::tanh_backward"):
            return ("fallback", "injected for the test")
        return real(name)

    monkeypatch.setattr(legality, "_load_policy", lambda: policy)
    f = torch.compile(torch.tanh, backend="neuron")
    x = torch.randn(3).to(device).requires_grad_()
    with pytest.raises(BackendCompilerFailed, match="aten::tanh_backward") as info:
        f(x)
    _compile_error(info)


# ----------------------------------------------------------------------- CPU autocopy


def test_cpu_inputs_are_copied_to_neuron(device):
    def f(x, w):
        return x @ w

    x, w = torch.randn(2, 3), torch.randn(3, 3)
    out = torch.compile(f, backend="neuron")(x, w)
    assert out.device.type == "neuron"
    torch.testing.assert_close(out.cpu(), x @ w, rtol=1e-5, atol=1e-6)


def test_cpu_input_mutation_is_written_back(device):
    def f(x):
        x.add_(1)
        return x * 2

    x = torch.zeros(3)
    out = torch.compile(f, backend="neuron")(x)
    assert out.device.type == "neuron"
    torch.testing.assert_close(x, torch.ones(3))


def test_disable_cpu_autocopy_names_the_input(device, monkeypatch):
    monkeypatch.setenv("TORCH_NEURONX_DYNAMO_DISABLE_CPU_AUTOCOPY", "1")

    def f(scale, x):
        return x * scale

    with pytest.raises(NeuronCompileError, match=r"input 1 \(argument 'x'\) is a CPU tensor"):
        torch.compile(f, backend="neuron")(2.5, torch.randn(2, 3))


def test_a_shape_seen_again_after_the_switch_to_symbolic_counts_once(device, monkeypatch):
    """Shapes 2, 3, 5, then 2 and 3 again: each shape counts once and keeps its first
    graph_index, and the bucketing warning does not fire. (torch.compile now passes
    dynamic=False for backend="neuron", so Dynamo never switches to a symbolic graph here;
    the symbolic path is covered by test_static_shapes.py's mark_dynamic test.)"""
    monkeypatch.setenv("TORCH_NEURONX_DYNAMO_SHAPE_WARNING_THRESHOLD", "4")
    f = torch.compile(_double, backend="neuron")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in (2, 3, 5, 2, 3, 2):
            x = torch.arange(float(n), device=device)
            torch.testing.assert_close(f(x).cpu(), torch.arange(float(n)) * 2 + 1)
    assert list(get_graph_counts().values()) == [3]
    by_shape = {}
    for r in get_dynamo_metrics():
        shape = [s for s in r["input_shapes"] if isinstance(s, tuple)][0]
        by_shape.setdefault(shape, set()).add(r["graph_index"])
    assert by_shape == {(2,): {1}, (3,): {2}, (5,): {3}}
    assert not [w for w in caught if "pad or bucket" in str(w.message).lower()]
