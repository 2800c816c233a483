"""AOT-level persistent cache (PyTorch's AOTAutogradCache behind the neuron backend): a
graph compiled before is served without AOTAutograd tracing, partitioning or code generation,
only for the same graph, input metadata, options and versions; damaged entries are rebuilt.

Dynamo's in-memory state is reset between compiles, so the second compile of a test takes
the same path as a second process (the AOT and Inductor caches are read from disk)."""

from __future__ import annotations

import glob
import json
import os

import pytest
import torch
from torch._dynamo.exc import BackendCompilerFailed

from torch_neuronx.compile import (
    NeuronCompileError,
    aot_cache,
    cache,
    get_dynamo_metrics,
    legality,
    reset_dynamo_metrics,
)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("aot_cache"))


@pytest.fixture(autouse=True)
def _own_cache(cache_dir, monkeypatch):
    monkeypatch.setenv("TORCH_NEURONX_NEFF_CACHE_DIR", cache_dir)
    monkeypatch.delenv("TORCH_NEURONX_NEFF_DISABLE_CACHE", raising=False)
    monkeypatch.delenv("TORCH_NEURONX_PRESERVE_COMPILATION_ARTIFACTS", raising=False)


def _f(x, w):
    return (torch.tanh(x @ w) * 1.5).sum()


def _inputs(device, n, dtype=torch.float32, rg=True):
    g = torch.Generator().manual_seed(n)
    x = torch.randn(n, 5, generator=g, dtype=dtype).to(device)
    w = torch.randn(5, 3, generator=g, dtype=dtype).to(device)
    return x, w.requires_grad_(rg)


def _compile_run(device, n, **kw):
    """Fresh Dynamo state, one compiled forward + backward; returns (record, out, grad)."""
    torch._dynamo.reset()
    reset_dynamo_metrics()
    x, w = _inputs(device, n, **kw)
    out = torch.compile(_f, backend="neuron")(x, w)
    grad = None
    if w.requires_grad:
        out.backward()
        grad = w.grad.cpu()
    (rec,) = get_dynamo_metrics()
    return rec, out.detach().cpu(), grad


def _expected(n, **kw):
    x, w = _inputs("cpu", n, **kw)
    out = _f(x, w)
    grad = None
    if w.requires_grad:
        out.backward()
        grad = w.grad
    return out.detach(), grad


def _check(n, out, grad, **kw):
    ref_out, ref_grad = _expected(n, **kw)
    torch.testing.assert_close(out, ref_out, rtol=1e-5, atol=1e-5)
    if ref_grad is not None:
        torch.testing.assert_close(grad, ref_grad, rtol=1e-5, atol=1e-5)


def test_second_compile_is_served_by_the_aot_cache(device):
    cold, out, grad = _compile_run(device, 6)
    assert cold["aot_cache"] == "miss" and cold["cache"] == "miss"
    _check(6, out, grad)
    warm, out, grad = _compile_run(device, 6)
    assert warm["aot_cache"] == "hit" and warm["cache"] == "hit"
    # node counts come with the entry although nothing was traced
    assert (warm["fw_node_count"], warm["bw_node_count"]) == (
        cold["fw_node_count"],
        cold["bw_node_count"],
    )
    assert warm["codegen_s"] > 0
    _check(6, out, grad)


@pytest.mark.parametrize(
    "variant",
    [{"n": 7}, {"dtype": torch.float64}, {"rg": False}],
    ids=["shape", "dtype", "requires_grad"],
)
def test_different_inputs_never_hit(device, variant):
    n = variant.pop("n", 6)
    _compile_run(device, 6)  # the reference entry (a hit or a miss, depending on order)
    rec, out, grad = _compile_run(device, n, **variant)
    assert rec["aot_cache"] == "miss"
    _check(n, out, grad, **variant)


def test_key_tag_names_options_threads_and_policy(monkeypatch):
    base = aot_cache.key_tag("neuron-default")
    assert base and base != aot_cache.key_tag("other-options")
    old = torch.get_num_threads()
    torch.set_num_threads(old + 1)
    try:
        assert aot_cache.key_tag("neuron-default") != base  # CPU kernels specialise on it
    finally:
        torch.set_num_threads(old)
    monkeypatch.setattr(legality, "_load_policy", lambda: lambda name: ("native", ""))
    assert aot_cache.key_tag("neuron-default") is None  # unknown policy: no AOT cache


def test_replaced_policy_bypasses_the_aot_cache(device, monkeypatch):
    """A hit would skip the legality pass, so a policy we cannot fingerprint disables it."""
    _compile_run(device, 6)
    real = legality._load_policy()
    monkeypatch.setattr(
        legality,
        "_load_policy",
        lambda: (
            lambda name: ("fallback", "injected") if name.startswith("aten::tanh") else real(name)
        ),
    )
    torch._dynamo.reset()
    x, w = _inputs(device, 6)
    with pytest.raises(BackendCompilerFailed, match="aten::tanh") as info:
        torch.compile(_f, backend="neuron")(x, w)
    assert isinstance(info.value.inner_exception, NeuronCompileError)


def _entry_files(cache_dir):
    return glob.glob(os.path.join(cache_dir, "compile-*", "inductor", "aotautograd", "*", "*"))


def test_truncated_aot_entry_is_reported_and_rebuilt(device, cache_dir):
    _compile_run(device, 8)
    entries = _entry_files(cache_dir)
    assert entries
    for e in entries:
        with open(e, "r+b") as f:
            f.truncate(max(1, os.path.getsize(e) // 2))
    n_reports = len(cache.corruption_reports)
    rec, out, grad = _compile_run(device, 8)
    assert len(cache.corruption_reports) > n_reports
    assert rec["aot_cache"] == "miss"
    _check(8, out, grad)
    again, out, grad = _compile_run(device, 8)
    assert again["aot_cache"] == "hit"
    _check(8, out, grad)


def test_manifest_lists_the_aot_entry(device, cache_dir):
    _compile_run(device, 9)
    listed = set()
    for m in glob.glob(os.path.join(cache_dir, "compile-*", "entries", "*", "*.json")):
        with open(m) as f:
            listed.update(json.load(f)["files"])
    assert any(r.startswith("aotautograd" + os.sep) for r in listed)


def test_disabled_cache_disables_the_aot_cache(device, monkeypatch, cache_dir):
    monkeypatch.setenv("TORCH_NEURONX_NEFF_DISABLE_CACHE", "1")
    before = set(_entry_files(cache_dir))
    for _ in range(2):
        rec, out, grad = _compile_run(device, 6)
        assert rec["aot_cache"] == "disabled" and rec["cache"] == "disabled"
        _check(6, out, grad)
    assert set(_entry_files(cache_dir)) == before


def _two_views(lin, x):
    y = lin(x)  # a bias-free linear on 3-D input: its matmul ends in _unsafe_view
    return y[:, 1:], y[:, 0]


def test_views_through_unsafe_view_are_served_right_and_not_saved(device):
    # torch 2.13 cannot pickle the _unsafe_view ViewMeta AOTAutograd keeps to replay an
    # output's view (pytorch/pytorch#185630): the saved entry held garbage sizes (the next
    # compile raised "invalid shape dimension -3362887879290299908"), or the save crashed the
    # process. PE Audio's encoder returns two such views (model-zoo sweep, issue 26).
    torch.manual_seed(0)
    lin = torch.nn.Linear(4, 8, bias=False)
    x = torch.randn(2, 5, 4)
    ref = _two_views(lin, x)
    lin_d = torch.nn.Linear(4, 8, bias=False).to(device)
    lin_d.load_state_dict(lin.state_dict())
    n_reports = len(cache.corruption_reports)
    status = []
    for _ in range(3):  # the second and third compile take the warm-cache path
        torch._dynamo.reset()
        reset_dynamo_metrics()
        out = torch.compile(_two_views, backend="neuron")(lin_d, x.to(device))
        for o, r in zip(out, ref):
            torch.testing.assert_close(o.cpu(), r)
        (rec,) = get_dynamo_metrics()
        status.append(rec["aot_cache"])
    assert status == ["bypass"] * 3
    assert len(cache.corruption_reports) == n_reports  # a bypass on purpose is no corruption
