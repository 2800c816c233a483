"""Debug artifacts (TORCH_NEURONX_PRESERVE_COMPILATION_ARTIFACTS) and dynamo metrics."""

from __future__ import annotations

import os

import torch

import torch_neuronx
from torch_neuronx.compile import get_dynamo_metrics, reset_dynamo_metrics


def _mlp(x, w1, w2):
    return torch.tanh(x @ w1) @ w2


def _inputs(device):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 5, generator=g).to(device)
    w1 = torch.randn(5, 6, generator=g).to(device).requires_grad_()
    w2 = torch.randn(6, 2, generator=g).to(device).requires_grad_()
    return x, w1, w2


def test_artifacts_written_per_process_and_graph(device, tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_NEURONX_PRESERVE_COMPILATION_ARTIFACTS", "1")
    monkeypatch.setenv("TORCH_NEURONX_DEBUG_DIR", str(tmp_path))
    out = torch.compile(_mlp, backend="neuron", options={"model_name": "mlp"})(*_inputs(device))
    out.sum().backward()
    (rec,) = get_dynamo_metrics()
    assert rec["name"].startswith("mlp_")
    gdir = tmp_path / f"proc_{os.getpid()}" / rec["name"]
    names = set(os.listdir(gdir))
    assert {"dynamo_graph.txt", "aot_forward.txt", "aot_backward.txt", "metrics.json"} <= names
    assert {"forward_code.py", "backward_code.py"} <= names
    assert "tanh" in (gdir / "dynamo_graph.txt").read_text()
    assert "aten.tanh" in (gdir / "aot_forward.txt").read_text()
    assert "def call(" in (gdir / "forward_code.py").read_text()  # Inductor's generated code


def test_no_artifacts_by_default(device, tmp_path, monkeypatch):
    monkeypatch.delenv("TORCH_NEURONX_PRESERVE_COMPILATION_ARTIFACTS", raising=False)
    monkeypatch.setenv("TORCH_NEURONX_DEBUG_DIR", str(tmp_path))
    with torch.no_grad():
        torch.compile(_mlp, backend="neuron")(*_inputs(device))
    assert not os.listdir(tmp_path)


def test_metrics_records_and_reset(device):
    x, w1, w2 = _inputs(device)
    out = torch.compile(_mlp, backend="neuron")(x, w1, w2)
    out.sum().backward()
    records = get_dynamo_metrics()
    assert len(records) == 1
    rec = records[0]
    for key in ("name", "node_count", "cache", "aot_autograd_s", "lowering_s", "codegen_s"):
        assert key in rec
    assert rec["node_count"] >= 4 and rec["fw_node_count"] > 0 and rec["bw_node_count"] > 0
    assert rec["cache"] in ("hit", "miss")
    assert rec["aot_autograd_s"] >= 0 and rec["lowering_s"] >= 0 and rec["codegen_s"] > 0
    assert rec["input_shapes"] == [(4, 5), (5, 6), (6, 2)]
    # the same records through the core's re-exports
    assert torch_neuronx.get_dynamo_metrics() == records
    assert torch.neuron.get_dynamo_metrics() == records
    get_dynamo_metrics()[0]["name"] = "mutated copy"
    assert get_dynamo_metrics()[0]["name"] == rec["name"]
    reset_dynamo_metrics()
    assert get_dynamo_metrics() == [] and torch_neuronx.get_dynamo_metrics() == []
