"""Issue 23: the overlap rule (perf/overlap.py) and likely ranges (perf/ranges.py)."""

import json

import pytest

from torch_neuronx.perf import collective_data as data
from torch_neuronx.perf import collective_fit as fit
from torch_neuronx.perf import overlap, ranges
from torch_neuronx.runtime import hardware as hw
from torch_neuronx.tools import cli


def test_all_but_the_last_collective_hide_under_compute():
    assert overlap.exposed(10.0, [1.0, 2.0, 3.0]) == 3.0  # 1 + 2 hidden, the last exposed
    assert overlap.exposed(1.0, [1.0, 2.0, 3.0]) == pytest.approx(3.0 + 2.0)  # 1 of 3 hidden
    assert overlap.exposed(5.0, []) == 0.0
    assert overlap.step_time(10.0, blocking_s=2.0, overlapped_s=[4.0, 1.0]) == 13.0
    # only the independent share of the compute hides collectives
    assert overlap.step_time(10.0, overlapped_s=[4.0, 1.0], hideable_s=2.0) == 10.0 + 1.0 + 2.0
    s = overlap.split([4.0, 1.0], 10.0)
    assert s == {"collective_s": 5.0, "exposed_s": 1.0, "hidden_s": 4.0}


def test_a_level_without_bandwidth_bound_runs_takes_the_wider_levels_bus_bandwidth():
    f = fit.fit(data.CALIBRATION)
    assert f[("trn1", "chip")][1] == pytest.approx(f[("trn1", "instance")][1])
    assert float(hw.COLLECTIVE_FIT["trn1"]["chip"][1]) == pytest.approx(45.0e9, rel=0.01)
    assert f[("trn2", "chip")][1] == pytest.approx(30.0e9, rel=0.01)  # bandwidth-bound: its own
    assert f[("trn2", "chip:reduce")][1] == pytest.approx(105.3e9, rel=0.01)


def test_likely_range_from_the_kind_of_work():
    lo, hi = ranges.likely(1.0, "decode")
    assert (lo, hi) == (min(1.0, ranges.BANDS["decode"][0]), max(1.0, ranges.BANDS["decode"][1]))
    lo, hi = ranges.likely(1.0, "prefill")
    assert (lo, hi) == (ranges.BANDS["prefill"][0], ranges.BANDS["prefill"][1])
    lo, hi = ranges.likely(1.0, "training")
    assert (lo, hi) == ranges.BANDS["training"]
    text = ranges.describe(14.2e-3, "decode")
    assert text.startswith("14.2 ms, likely 10.4 ms to 17.3 ms") and "modeled" in text
    assert ranges.collective_band("trn1") == (0.59, 1.49)
    with pytest.raises(ValueError, match="unknown kind"):
        ranges.band("gossip")


def test_cost_prints_the_range(capsys):
    assert cli.main(["cost", "mm", "4096x4096", "4096x4096", "--dtype", "bf16", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for r in out["rows"]:
        lo, hi = r["likely_time_us"]
        t = r["modeled_time_us"]
        assert lo == pytest.approx(t * 0.62) and hi == pytest.approx(t * ranges.BANDS["kernel"][1])
        assert "kernel work" in r["range_from"]
    assert cli.main(["cost", "all_reduce", "16777216", "--ranks", "64"]) == 0
    text = capsys.readouterr().out
    assert "likely" in text and "collective work (trn1)" in text


def test_summary_reports_range_and_overlap():
    from torch_neuronx.perf import events as ev
    from torch_neuronx.perf.measure import Measurement
    from torch_neuronx.runtime.engines import Engine

    m = Measurement()
    work = [
        ev.Cost(ev.KERNEL, "mm_backward", Engine.tensor, 10e-3),
        ev.Cost(ev.COLLECTIVE, "all_reduce", Engine.collective, 4e-3),
        ev.Cost(ev.COLLECTIVE, "all_reduce", Engine.collective, 1e-3),
    ]
    for i, c in enumerate(work):
        m._on_event(ev.Event(0, 0.0, c.duration, c, i))
    s = m.summary()
    assert s["device_time_s"] == pytest.approx(15e-3)  # one after another
    assert s["range_kind"] == "training"  # the region ran a backward op
    lo, hi = s["likely_range_s"]
    t_lo, t_hi = ranges.BANDS["training"]
    assert lo == pytest.approx(15e-3 * min(1.0, t_lo)) and hi == pytest.approx(15e-3 * t_hi)
    assert "modeled" in s["range_note"]
    ov = s["overlap"]
    assert ov["exposed_s"] == pytest.approx(1e-3) and ov["hidden_s"] == pytest.approx(4e-3)
    assert ov["device_time_s"] == pytest.approx(11e-3)
    assert m.summary(kind="decode")["range_kind"] == "decode"
    assert "likely" in m.table()


def test_micro_batch_mode_pays_the_optimizer_once_per_step():
    one = overlap.accumulated_step(0.1, 1, once_s=0.05, blocking_s=0.02)
    eight = overlap.accumulated_step(0.1, 8, once_s=0.05, blocking_s=0.02)
    assert eight - one == pytest.approx(7 * 0.1)  # only the micro-batches repeat
    assert eight < 8 * one
    with pytest.raises(ValueError, match="micro_batches"):
        overlap.accumulated_step(0.1, 0)
