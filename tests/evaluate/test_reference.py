"""``--reference DEVICE``: the unmodified script re-run with the neuron device mapped to the
reference device, compared step by step (loss, gradient norm); a compiled script is also
re-run on neuron eagerly."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from evaluate_support import marker_line

from torch_neuronx.evaluate.reference import MapDevice, NeuronStream
from torch_neuronx.runtime import env

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "train_gpt.py"


def test_reference_cpu_on_the_tinygpt_example(run_eval):
    r = run_eval(
        "example_reference",
        "--steps",
        "3",
        "--reference",
        "cpu",
        "--fail-on",
        "numerics",
        str(EXAMPLE),
        "--steps",
        "3",
        "--plain",
    )
    assert r.rc == 0, r.explain()
    n = r.report["numerics"]
    assert n["verdict"] == "pass", n
    runs = n["runs"]
    assert set(runs) == {"neuron_eager", "reference"}
    ref = runs["reference"]
    assert ref["device"] == "cpu" and ref["touched_neuron"] is False  # the mapping held
    assert len(runs["neuron_eager"]["loss"]) == len(ref["loss"]) == 3
    # the emulated core runs PyTorch's CPU kernels: eager neuron equals the CPU bit for bit
    assert runs["neuron_eager"]["loss"] == ref["loss"]
    assert runs["neuron_eager"]["grad_norm"] == ref["grad_norm"]
    got = {(c["a"], c["b"], c["quantity"]) for c in n["comparisons"]}
    assert got == {
        ("neuron_eager", "reference", "loss"),
        ("neuron_eager", "reference", "grad_norm"),
    }
    # the example's own CPU twin stepped too, but only the neuron optimizer's steps counted
    assert r.report["steps_completed"] == 3
    assert (r.out / "reference-reference.json").exists()


def test_reference_verdict_fails_beyond_tolerance_and_lists_policy_deviations(run_eval):
    r = run_eval(
        "policy_reference",
        "--reference",
        "cpu",
        "--fail-on",
        "numerics",
        "--tolerance",
        "loss=1e-12,grad_norm=1e-12",
        "policy_train.py",
    )
    assert r.rc == 3, r.explain()  # the numerics gate
    rep = r.report
    n = rep["numerics"]
    assert n["verdict"] == "fail" and n["tolerances"]["loss"] == 1e-12
    loss = next(c for c in n["comparisons"] if c["quantity"] == "loss")
    # float64 arithmetic run in float32: different in the last bits, not more
    assert 0 < loss["max_rel_diff"] < 1e-5, loss
    assert rep["fail_on"]["triggered"] == ["numerics: verdict fail"]
    dev = n["policy_deviations"]

    def lines(kind, op):
        row = next(o for o in dev[kind]["ops"] if o["name"] == op)
        return {int(s["site"].split(":")[-1].split(" ")[0]) for s in row["sites"]}

    assert marker_line("policy_train.py", "float64") in lines("float64_in_float32", "aten::mm")
    assert lines("autocast", "aten::mm") == {marker_line("policy_train.py", "autocast")}
    assert dev["autocast"]["count"] >= 3


def test_explicit_step_markers_without_an_optimizer(run_eval):
    r = run_eval("manual_steps", "--steps", "3", "--reference", "cpu", "manual_steps.py")
    assert r.rc == 0, r.explain()
    rep = r.report
    assert rep["steps_completed"] == 3  # evaluate.step() delimited the 6-iteration loop
    runs = rep["numerics"]["runs"]
    # weights drawn on neuron, data on the host: the mapped run keeps the two streams apart
    assert (
        runs["neuron_eager"]["loss"] == runs["reference"]["loss"]
        and len(runs["reference"]["loss"]) == 3
    )
    # no optimizer, so no gradient norm: only the loss is compared
    assert [c["quantity"] for c in rep["numerics"]["comparisons"]] == ["loss"]
    assert rep["numerics"]["verdict"] == "pass"


@pytest.mark.skipif(
    not env.flag("TORCH_NEURONX_TEST_FULL"),
    reason="compiles TinyGPT and runs the script three times (~40 s): TORCH_NEURONX_TEST_FULL=1",
)
def test_reference_on_compiled_tinygpt_also_compares_eager(run_eval):
    r = run_eval(
        "tinygpt_compiled_reference",
        "--steps",
        "3",
        "--reference",
        "cpu",
        "tinygpt_train.py",
        "--compile",
        "--steps",
        "10",
    )
    assert r.rc == 0, r.explain()
    rep = r.report
    n = rep["numerics"]
    assert set(n["runs"]) == {"neuron_compiled", "neuron_eager", "reference"}
    assert n["runs"]["neuron_eager"]["touched_neuron"] is True
    assert n["runs"]["reference"]["touched_neuron"] is False
    pairs = {(c["a"], c["b"]) for c in n["comparisons"]}
    assert ("neuron_compiled", "neuron_eager") in pairs and (
        "neuron_compiled",
        "reference",
    ) in pairs
    assert n["verdict"] == "pass", n["comparisons"]
    assert rep["compilation"]["graphs"] >= 1 and rep["compilation"]["compile_s"] > 0


def _draws(device):
    """Random numbers from both streams, interleaved as scripts do: weights made on the device,
    data on the host, dropout on device activations."""
    torch.manual_seed(0)
    w = torch.randn(4, 3, device=device)
    x = torch.randn(2, 4)
    lin = torch.nn.Linear(4, 3).to(device)  # initialised from the host stream, then moved
    h = torch.nn.functional.dropout(x.to(device) @ w + lin(x.to(device)), 0.5)
    with torch.device(device):  # built on the device, re-initialised through .data
        emb = torch.nn.Embedding(10, 4)
    emb.weight.data.normal_(0, 0.02)
    ids = torch.randint(0, 10, (2, 5), device=device)
    after = torch.randn(3)  # the host stream was not advanced by any device draw
    assert torch.neuron.get_rng_state().numel() > 0  # torch.neuron calls still see neuron
    return [t.detach().cpu() for t in (w, x, lin.weight, h, emb.weight, ids, after)]


def test_mapped_run_keeps_the_neuron_random_stream_apart():
    expect = _draws("neuron")
    stream = NeuronStream()
    with stream, MapDevice("cpu", stream):
        got = _draws("neuron")
    for e, g in zip(expect, got, strict=True):
        torch.testing.assert_close(g, e, rtol=0, atol=0)
    # without the stream the two generators are one, and the draws differ
    with MapDevice("cpu"):
        merged = _draws("neuron")
    assert not torch.equal(merged[1], expect[1])


def test_device_mapping_covers_the_usual_idioms():
    with MapDevice("cpu"):
        a = torch.randn(2, device="neuron")
        b = torch.zeros(2, device=torch.device("neuron", 0))
        with torch.device("neuron"):
            c = torch.ones(2)
            m = torch.nn.Linear(2, 2)
        d = torch.ones(2).to("neuron")
        e = torch.ones(2).to(device="neuron:0", dtype=torch.float64)
        f = torch.nn.Linear(2, 2).to("neuron")
        g = torch.ones(2).neuron()
        h = torch.tensor([1.0], device="neuron")
    for t in (a, b, c, m.weight, d, e, f.weight, g, h):
        assert t.device.type == "cpu", t.device
    assert e.dtype == torch.float64
    assert torch.ones(1, device="neuron").device.type == "neuron"  # only inside the mode


def test_bad_reference_and_tolerance_list_the_valid_choices(capsys):
    from torch_neuronx.tools.cli import main

    assert main(["evaluate", "--reference", "tpu", "x.py"]) == 2
    err = capsys.readouterr().err
    assert "--reference 'tpu'" in err and "valid: cpu" in err
    assert main(["evaluate", "--tolerance", "speed=1", "x.py"]) == 2
    assert "loss, grad_norm, output" in capsys.readouterr().err
    assert main(["evaluate", "--reference", "cpu", "--fake", "x.py"]) == 2
    assert main(["evaluate", "--fail-on", "numerics", "x.py"]) == 2
    assert "add --reference cpu" in capsys.readouterr().err
