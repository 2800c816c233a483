"""The published runs a report names behind its likely ranges (perf/ranges.py's ``BACKING``) are
the validation rows the bands come from, with the same ratios; and the ranges a report shows
are the bands applied to its figures (evaluate/likely.py)."""

from __future__ import annotations

import os

import pytest

from torch_neuronx.evaluate import likely
from torch_neuronx.perf import ranges

FULL = os.environ.get("TORCH_NEURONX_TEST_FULL") == "1"


def test_bands_are_the_extremes_of_the_runs_behind_them():
    for kind, runs in ranges.BACKING.items():
        ratios = [s for _, s, _ in runs]
        assert ranges.BANDS[kind] == (min(ratios), max(ratios)), kind


def test_backing_runs_are_the_validation_rows():
    """Every workload and kernel row the bands come from (the chip-peak rows trace an 8192^3
    matmul per generation: under TORCH_NEURONX_TEST_FULL=1 only)."""
    from torch_neuronx.perf import validation

    rows = validation.kernel_rows()  # the workload validation rows come by default
    if FULL:
        rows = validation.peak_rows() + rows
    computed = ranges.backing_rows(rows)  # what the stored table must say
    stored = {a: (k, s, src) for k, runs in ranges.BACKING.items() for a, s, src in runs}
    for kind, runs in computed.items():
        for anchor, ratio, source in runs:
            assert anchor in stored, (
                f"{anchor!r} is missing from perf/ranges.BACKING: print ranges.backing_rows()"
            )
            assert stored[anchor] == (kind, pytest.approx(ratio, abs=0.005), source), anchor
    if FULL:
        assert {a for runs in computed.values() for a, _, _ in runs} == set(stored)


def test_collective_backing_is_the_nccom_validation_set():
    from torch_neuronx.perf import collective_data

    trn1 = ranges.backing("collective", "trn1")
    assert len(trn1) == sum(r.gen == "trn1" for r in collective_data.VALIDATION)
    lo, hi = ranges.collective_band("trn1")
    assert min(b["speed_ratio"] for b in trn1) == pytest.approx(lo, abs=0.005)
    assert max(b["speed_ratio"] for b in trn1) == pytest.approx(hi, abs=0.005)


def test_likely_scales_times_and_costs_with_the_band_and_rates_inversely():
    row = {
        "profile": "trn2.3xlarge/lnc2",
        "instance": "trn2.3xlarge",
        "step_s": 0.010,
        "compiled_step_s": 0.008,
        "usd_per_1000_steps": 2.0,
        "tokens_per_s": 1000.0,
    }
    sec = {
        "profiles": [row],
        "recommendation": {"profile": row["profile"], "metric": "usd_per_1000_steps", "value": 2.0},
    }
    likely.add(sec, "decode")
    b_lo, b_hi = ranges.BANDS["decode"]
    lo, hi = ranges.likely(1.0, "decode", "trn2")
    # a time's range widens only outward: never below the modeled time when the model was
    # never slower than a published run, never above it when never faster
    assert (lo, hi) == (min(1.0, b_lo), max(1.0, b_hi))
    assert row["likely"]["step_s"] == pytest.approx([0.010 * lo, 0.010 * hi])
    assert row["likely"]["usd_per_1000_steps"] == pytest.approx([2.0 * lo, 2.0 * hi])
    assert row["likely"]["tokens_per_s"] == pytest.approx([1000 / hi, 1000 / lo])
    assert sec["recommendation"]["likely"] == pytest.approx([2.0 * lo, 2.0 * hi])
    assert (
        sec["range"]["label"] == "modeled; likely range from the validation errors of decode work"
    )
    assert [b["run"] for b in sec["range"]["backing"]["all"]] == [
        a for a, _, _ in ranges.BACKING["decode"]
    ]


def test_summary_and_cost_give_their_costs_a_range_too():
    """perf.measure().summary() and ``torch-neuronx cost --json``: a cost is time x price, so
    its likely range is the time's."""
    import json
    import subprocess
    import sys

    from torch_neuronx import perf
    from torch_neuronx.perf.events import Cost
    from torch_neuronx.testing.child import child_env

    with perf.measure(price_per_hour=36.0) as m:
        perf.record(0, Cost("op", "aten::mm", "tensor", 100.0))
    s = m.summary()
    lo, hi = s["likely_range_s"]
    assert s["likely_instance_cost_usd"] == pytest.approx((lo / 100.0, hi / 100.0))
    out = subprocess.run(
        [sys.executable, "-m", "torch_neuronx.tools.cli", "cost", "mm", "256x256", "256x256"]
        + ["--json"],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=120,
    )
    for row in json.loads(out.stdout)["rows"]:
        if row["usd_per_million_calls"] is None:
            continue
        t_lo, t_hi = row["likely_time_us"]
        scale = row["usd_per_million_calls"] / row["modeled_time_us"]
        assert row["likely_usd_per_million_calls"] == pytest.approx([t_lo * scale, t_hi * scale])
