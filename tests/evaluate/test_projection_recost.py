"""The projection re-costs every recorded piece of work with each profile's hardware figures:
a Trn3 projection of a run emulated on Trn2 equals the same run recorded on Trn3."""

from __future__ import annotations

import pytest
import torch

from torch_neuronx import perf
from torch_neuronx.evaluate import profiles
from torch_neuronx.evaluate.collector import Collector
from torch_neuronx.perf import events as ev
from torch_neuronx.perf import recost, transfers
from torch_neuronx.perf import target as perf_target
from torch_neuronx.perf.collectives import collective_cost
from torch_neuronx.runtime.engines import Engine

PROFILES = profiles.profiles(["trn2.3xlarge", "trn3.3xlarge"], 2)
TRN2, TRN3 = (p.target for p in PROFILES)


def _step(f):
    """Eager ops, a compiled graph (launch + kernels), host <-> device copies."""
    w = torch.randn(64, 96, device="neuron", requires_grad=True)
    x = torch.randn(32, 64).to("neuron")
    y = f(x, w)
    z = (y * 2).softmax(0)
    z.sum().backward()
    return z.cpu()


def test_trn3_projection_equals_the_same_work_recorded_on_trn3(monkeypatch):
    f = torch.compile(lambda x, w: torch.relu(x @ w).sum(dim=0), backend="neuron")
    _step(f)  # compiles outside the measured region
    c = Collector(PROFILES).start()
    try:
        _step(f)
        c.mark_step()
    finally:
        c.stop()
    step = c.steps[0].to_dict()
    kinds = {k for k, v in step["modeled_by_kind_s"].items() if v > 0}
    assert {ev.OP, ev.KERNEL, ev.GRAPH, ev.COPY} <= kinds, kinds
    assert c.scaled_costs == 0  # nothing was scaled: every cost had a basis
    # the emulated profile re-costed on itself is what was recorded
    assert step["projected_s"]["trn2.3xlarge/lnc2"] == pytest.approx(
        step["modeled_device_s"], rel=1e-12
    )
    # the same step recorded with Trn3 as the emulated target
    monkeypatch.setattr(perf_target, "current", lambda: TRN3)
    with perf.measure() as m:
        _step(f)
    on_trn3 = sum(e.cost.duration for e in m.events)
    assert step["projected_s"]["trn3.3xlarge/lnc2"] == pytest.approx(on_trn3, rel=1e-12)
    # and it is a different figure from Trn2's (re-costed, not copied)
    assert step["projected_s"]["trn3.3xlarge/lnc2"] != step["projected_s"]["trn2.3xlarge/lnc2"]


def test_collectives_copies_and_fallbacks_recost_with_the_target_table():
    ranks = list(range(64))
    c2 = collective_cost("all_gather", 1 << 24, ranks, TRN2, in_graph=True)
    assert recost.cost_on(c2, TRN3) == collective_cost(
        "all_gather", 1 << 24, ranks, TRN3, in_graph=True
    )
    d2d = transfers.copy_cost(transfers.D2D, 1 << 20, TRN2)
    assert recost.cost_on(d2d, TRN3) == transfers.copy_cost(transfers.D2D, 1 << 20, TRN3)
    fb = transfers.fallback_cost("aten::linalg_qr", 2e-3, 4096, 8192, TRN2, "32x32")
    again = recost.cost_on(fb, TRN3)
    assert again == transfers.fallback_cost("aten::linalg_qr", 2e-3, 4096, 8192, TRN3, "32x32")
    assert again.host_s == 2e-3  # the measured host kernel time is the one input kept
    bare = ev.Cost(kind=ev.KERNEL, name="nki:k", engine=Engine.vector, duration=1e-6)
    assert recost.cost_on(bare, TRN3) is None  # no basis: the caller must say what it does
