"""A Hugging Face transformers Llama built from a config: ``--fake`` at Llama-3-8B size (seconds,
a few GiB of host memory, the ordinary idioms of a training script), and a tiny one run for
real on neuron against a CPU reference."""

from __future__ import annotations

import pytest
from evaluate_support import SCRIPTS, have, marker_line

pytestmark = pytest.mark.skipif(
    not have("transformers"),
    reason="transformers is not installed (make evaluate-deps installs it)",
)


def test_fake_llama_8b_projection(run_eval):
    r = run_eval(
        "llama_fake",
        "--fake",
        "--fsdp",
        "16",
        "--instances",
        "trn2.3xlarge,trn2.48xlarge,trn3.3xlarge",
        "--tokens-per-step",
        "2048",
        "hf_llama.py",
        "--seq",
        "2048",
    )
    assert r.rc == 0, r.explain()
    rep = r.report
    fk = rep["fake_projection"]
    n_params = 8.03e9
    # 6 N T FLOPs for a training step (plus attention): within 25%
    assert 0.9 * 6 * n_params * 2048 < fk["flops_per_step"] < 1.4 * 6 * n_params * 2048
    lay = fk["layout"]
    assert (
        lay["parameters_gradients_optimizer_bytes"] > 4 * n_params * 2 * 0.95
    )  # bf16 params+grads+2 Adam states
    assert lay["memory_per_core_estimate"] < fk["peak_memory_single_core"]
    keys = {p["profile"] for p in fk["profiles"]}
    assert {"trn2.3xlarge/lnc2", "trn2.48xlarge/lnc2", "trn3.3xlarge/lnc2"} <= keys
    for p in fk["profiles"]:
        assert p["step_s"] > 0 and 0 < p["mfu"] < 1
    # .item() on a fake loss is data dependence, reported at the script's line
    line = marker_line("hf_llama.py", "item")
    assert any(
        d["site"].startswith(f"{SCRIPTS / 'hf_llama.py'}:{line}") for d in fk["data_dependence"]
    )
    # the trace's wall time is reported (tests never assert on wall time: a loaded CI machine
    # would make a bound flaky; memory is the bound that holds at any load)
    assert fk["trace_wall_s"] > 0
    assert fk["host_max_rss_bytes"] < 4 * 2**30


def test_hf_llama_from_a_config_runs_for_real_with_a_cpu_reference(run_eval):
    r = run_eval(
        "hf_llama_tiny",
        "--reference",
        "cpu",
        "--fail-on",
        "fallback,numerics",
        "hf_llama.py",
        "--size",
        "tiny",
        "--seq",
        "32",
        "--batch",
        "2",
        "--eager",
    )
    assert r.rc == 0, r.explain()
    rep = r.report
    assert rep["status"] == "ok" and rep["steps_completed"] == 1
    assert rep["placement"]["native_calls"] > 100 and rep["placement"]["fallback_calls"] == 0
    item = [x for x in rep["host_sync"]["reads"] if x["name"] == ".item()"]
    assert item and item[0]["sites"][0]["site"].startswith(
        f"{SCRIPTS / 'hf_llama.py'}:{marker_line('hf_llama.py', 'item')} "
    )
    n = rep["numerics"]
    assert n["verdict"] == "pass" and n["runs"]["reference"]["touched_neuron"] is False
    assert rep["projection"]["profiles"][0]["step_s"] > 0
