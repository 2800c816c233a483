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
    assert cli.main(["cost", "frobnicate", "8"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("torch-neuronx cost: error: cannot model frobnicate on 8 (torch.float32)")
    assert "unknown op 'frobnicate'" in err and err.count("\n") == 1, err


@pytest.mark.parametrize(
    "argv, says",
    [
        (["mm", "4x"], "malformed shape '4x'"),
        (["mm", "4xa", "3x3"], "malformed shape '4xa'"),
        (["mm"], "cannot model mm on no shapes"),
        (["conv2d", "4x4"], "too few input shapes"),
        (["mm", "4x4", "5x5"], "cannot model mm on 4x4 5x5"),
        (["mm", "4x4", "4x4", "--dtype", "foo"], "unknown dtype 'foo'"),
        (["mm", "4x4", "4x4", "--instances", "p5"], "unknown instance 'p5'"),
        (["mm", "4x4", "4x4", "--instances", ","], "names no instance"),
        (["all_reduce", "4x4", "--ranks", "0"], "'0' must be >= 1"),
        (["all_reduce", "4x4", "--ranks", "two"], "'two' is not a whole number"),
        (["mm", "4x4", "4x4", "--price-per-hour", "-1"], "must be a finite number > 0"),
        (["mm", "4x4", "4x4", "--price-per-hour", "nan"], "must be a finite number > 0"),
    ],
)
def test_malformed_cost_arguments_are_one_line_and_exit_2(capsys, argv, says):
    """Issue 28 item 5: before, these ended in tracebacks ('max() arg is an empty sequence',
    'invalid literal for int()') or, for a negative price, in a negative cost."""
    try:
        rc = cli.main(["cost", *argv])
    except SystemExit as e:  # argparse's own checks exit
        rc = e.code
    err = capsys.readouterr().err
    assert rc == 2 and says in err, err
    assert err.startswith("torch-neuronx cost: error: ") and err.count("\n") == 1, err


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
