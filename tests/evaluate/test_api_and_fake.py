"""The Python API (neuron eager, neuron compiled, reference, compared step by step) and the
fake-tensor projection: exact FLOPs and peak memory within 10% of a measured run."""

from __future__ import annotations

import pytest
import torch

from torch_neuronx import evaluate
from torch_neuronx.testing.models import GPTConfig, TinyGPT, make_batch

CFG = GPTConfig()


def _loss(out, batch):
    return out[1]


def _opt(params):
    return torch.optim.AdamW(params, lr=3e-3, foreach=False)  # fake params are not foreach-eligible


def test_api_runs_eager_compiled_and_reference_and_compares(tmp_path):
    rep = evaluate.evaluate_model(
        TinyGPT(CFG, seed=0),
        [make_batch(i, 4, config=CFG) for i in range(3)],
        _loss,
        _opt,
        steps=3,
        out_dir=str(tmp_path),
    )
    assert rep["status"] == "ok", rep["error"]
    runs = rep["numerics"]["runs"]
    assert set(runs) == {"neuron_eager", "neuron_compiled", "reference"}
    assert runs["reference"]["device"] == "cpu" and len(runs["neuron_eager"]["loss"]) == 3
    pairs = {(c["a"], c["b"], c["quantity"]) for c in rep["numerics"]["comparisons"]}
    assert ("neuron_eager", "reference", "loss") in pairs and (
        "neuron_compiled",
        "neuron_eager",
        "loss",
    ) in pairs
    assert rep["numerics"]["verdict"] == "pass", rep["numerics"]["comparisons"]
    # eager neuron runs CPU's own kernels: the losses are identical to the reference
    assert runs["neuron_eager"]["loss"] == runs["reference"]["loss"]
    co = rep["compilation"]  # TinyGPT compiled: graphs, compile time, cold vs steady-state step
    assert co["graphs"] >= 1 and co["compile_s"] > 0
    assert co["cold_step_s"] > co["steady_state_step_s"]  # the first step compiled
    assert runs["neuron_compiled"]["loss"][0] == pytest.approx(
        runs["reference"]["loss"][0], rel=1e-4
    )
    assert rep["projection"]["compiled_run"][0]["step_s"] > 0
    assert (
        rep["projection"]["profiles"][0]["tokens_per_s"] > 0
    )  # integer inputs: tokens per step known
    assert (tmp_path / "report.json").exists() and (tmp_path / "report.html").exists()


def _measured_step(model_fn, batch):
    """One eager training step on neuron, measured: (FLOPs, peak allocated bytes)."""
    from torch_neuronx.perf import measure

    torch.neuron.synchronize()
    torch.neuron.empty_cache()
    base = torch.neuron.memory_allocated()
    torch.neuron.reset_peak_memory_stats()
    with measure() as m:
        model = model_fn().to("neuron")
        opt = _opt(model.parameters())
        _, loss = model(*(x.to("neuron") for x in batch))
        loss.backward()
        opt.step()
    peak = torch.neuron.max_memory_allocated() - base
    flops = sum(e.cost.flops for e in m.events if e.cost.kind == "op")
    del model, opt, loss
    return flops, peak


def test_fake_projection_matches_a_measured_run():
    cfg = GPTConfig(d_model=128, n_heads=4, n_layers=2, seq_len=64, vocab_size=512)
    batch = make_batch(0, 8, config=cfg)

    def build():
        m = TinyGPT(cfg, seed=0).to("neuron")
        return m, _opt(m.parameters())

    def step(model, opt):
        _, loss = model(*(x.to("neuron") for x in batch))
        loss.backward()
        opt.step()

    fk = evaluate.project_model(build, step, instances=["trn2.3xlarge"])
    flops, peak = _measured_step(lambda: TinyGPT(cfg, seed=0), batch)
    assert fk["flops_per_step"] == flops  # the same work function on the same ops: exactly equal
    assert abs(fk["peak_memory_single_core"] - peak) <= 0.10 * peak, (
        fk["peak_memory_single_core"],
        peak,
    )
    row = fk["profiles"][0]
    assert row["step_s"] > 0 and row["fits"]
