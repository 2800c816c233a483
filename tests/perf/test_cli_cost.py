"""``torch-neuronx cost`` and ``torch-neuronx info``'s hardware table (issue 10, point 7)."""

import json

import pytest
import torch

from torch_neuronx.perf import estimate, target
from torch_neuronx.tools import cli


def _run(capsys, *argv):
    assert cli.main(list(argv)) == 0
    return capsys.readouterr().out


def test_cost_of_a_bf16_matmul_on_each_generation(capsys):
    out = json.loads(
        _run(capsys, "cost", "mm", "4096x4096", "4096x4096", "--dtype", "bf16", "--json")
    )
    assert out["modeled"] is True
    rows = {r["generation"]: r for r in out["rows"]}
    assert set(rows) == {"trn1", "trn2", "trn3"}
    for r in rows.values():
        expect = estimate.estimate_op(
            "mm", [(4096, 4096)] * 2, torch.bfloat16, target.for_instance(r["instance"])
        )
        assert r["modeled_time_us"] == pytest.approx(expect.duration * 1e6)
        assert r["bound"] == "compute" and r["engine"] == "tensor" and r["flops"] == 2 * 4096**3
    # Trn2 and Trn3 have the same per-core BF16 TensorE peak (79 TFLOPS); Trn1's core is slower
    assert rows["trn2"]["modeled_time_us"] == pytest.approx(rows["trn3"]["modeled_time_us"])
    assert rows["trn1"]["modeled_time_us"] > rows["trn2"]["modeled_time_us"]


def test_cost_table_says_modeled(capsys):
    out = _run(capsys, "cost", "add", "1024x1024", "1024x1024", "--dtype", "fp32", "--compiled")
    assert "modeled" in out and "No Trainium".lower() in out.lower()
    assert "trn2.48xlarge" in out and "memory" in out


def test_cost_of_a_collective(capsys):
    out = json.loads(
        _run(capsys, "cost", "all_reduce", "16777216", "--dtype", "bf16", "--ranks", "64", "--json")
    )
    assert all(r["engine"] == "collective" and r["detail"] for r in out["rows"])


def test_cost_names_unknown_ops(capsys):
    with pytest.raises(ValueError, match="unknown op 'frobnicate'"):
        cli.main(["cost", "frobnicate", "8"])


def test_info_shows_the_hardware_table_with_sources(capsys):
    out = _run(capsys, "info")
    assert "hardware table of trn2.3xlarge" in out and "sources" in out
    hw = {r["figure"]: r for r in json.loads(_run(capsys, "info", "--json"))["hardware"]}
    assert hw["NeuronCore-v3 TensorE bf16 peak"] == {
        "figure": "NeuronCore-v3 TensorE bf16 peak",
        "value": "79 TFLOP/s",
        "source": "[NKI2, NC3]",
    }
    assert hw["logical core (LNC=2) HBM"]["value"] == "24 GiB"
    assert hw["Trainium2 host link"]["source"].startswith("assumption")
