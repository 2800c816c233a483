"""Training rows by Neuron SDK release (issue 23): the era of each row, the split fixed before the
fit (every other row of each era calibration), and the one release-efficiency term."""

import re

import pytest

from torch_neuronx.perf import ranges, releases, workload_data, workload_fit, workloads


def test_era_of_a_release():
    assert releases.era("2.13") == releases.era("2.15") == "2.1x"
    assert releases.era("2.24") == releases.era("2.28") == releases.era("2.20") == "2.2x"
    for sdk in ("2.16", "2.19", "3.0"):  # no published training row: no era by guess
        with pytest.raises(ValueError, match="no published training row"):
            releases.era(sdk)
    assert releases.efficiency("") == releases.efficiency("2.28") == 1.0
    assert releases.efficiency("2.15") == releases.EFFICIENCY["2.1x"] < 1.0


def test_every_training_row_states_the_release_its_table_gives():
    rows = [r for r in workload_data.ROWS if r.kind == "training"]
    assert len(rows) == 14
    for r in rows:
        # the release is the one the setup quotes from the published table
        assert re.search(r"\(SDK (2\.\d+)\)", r.setup).group(1) == r.sdk, r


def test_split_is_every_other_row_of_each_era_in_table_order():
    rows = [r for r in workload_data.ROWS if r.kind == "training" and r.split != "held-out"]
    for era in ("2.1x", "2.2x"):
        mine = [r.split for r in rows if releases.era(r.sdk) == era]
        assert mine == ["calibration", "validation"] * (len(mine) // 2) + (
            ["calibration"] if len(mine) % 2 else []
        ), (era, mine)
    # the held-out rows stay never fitted, whatever their era
    held = [r for r in workload_data.ROWS if r.kind == "training" and r.split == "held-out"]
    assert len(held) == 6 and all(releases.era(r.sdk) == "2.1x" for r in held)


def test_release_efficiency_divides_device_compute_not_collectives():
    w = next(r for r in workload_data.ROWS if r.model == "GPT3-23B").training
    a = workloads.training_step(w, 1.0)
    b = workloads.training_step(w, 0.5)
    assert b["sync_s"] == a["sync_s"]  # the data-parallel collectives are measured, not slowed
    assert b["optimizer_s"] == pytest.approx(2 * a["optimizer_s"])
    assert a["step_s"] < b["step_s"] < 2 * a["step_s"]  # the TP collectives are not scaled
    # a row of an older release is costed with its era's efficiency, a 2.2x row with none
    old = next(r for r in workload_data.ROWS if r.model == "GPT3-23B")
    with releases.override("2.1x", 1.0):
        fast = workloads.predict(old)
    assert workloads.predict(old) < fast
    new = next(r for r in workload_data.ROWS if r.model == "Llama-3.1-70B")
    with releases.override("2.1x", 0.3):
        assert workloads.predict(new) == pytest.approx(workloads.predict(new))


def test_release_fit_reads_its_eras_calibration_rows_only():
    rows = workload_fit._era_rows(workload_data.CALIBRATION, "2.1x")
    assert [r.model for r in rows] == ["Llama-2-7b", "Llama-2-13b"]
    assert all(r.split == "calibration" for r in rows)
    # the TensorE efficiency is fitted on the newest era's training rows and the prefill rows
    bound = workload_fit._bound_rows(workload_data.CALIBRATION)
    assert {r.kind for r in bound} == {"training", "prefill"}
    assert all(releases.era(r.sdk) == "2.2x" for r in bound if r.kind == "training")


def test_training_ranges_say_which_release_they_model():
    assert "modeled for Neuron SDK 2.2x" in ranges.describe(10.0, "training")
    assert "Neuron SDK 2.2x" in ranges.note("training", "trn1")
