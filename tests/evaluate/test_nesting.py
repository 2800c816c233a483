"""Evaluations nest and clean up (issue 27): the driver's per-op callback is an observer list
(eager/perf_hook.py), so an inner collector leaves the outer one counting and the performance
model costing; every torch attribute evaluate/ replaces is a scoped patch
(runtime/patches.scoped): listed while active, restored exactly afterwards."""

import torch

from torch_neuronx import perf
from torch_neuronx.eager import perf_hook
from torch_neuronx.evaluate.collector import Collector
from torch_neuronx.runtime import patches


def _ops(coll) -> set:
    return {name.split(".", 1)[0] for name in coll.placement_native}


def _scoped() -> set:
    return {p.target for p in patches.installed() if p.scoped}


def test_nested_collectors_both_see_ops_and_the_model_keeps_costing():
    x = torch.ones(8, device="neuron")
    observers = perf_hook._observers
    with perf.measure() as m:
        outer = Collector([]).start()
        try:
            x + 1
            inner = Collector([]).start()
            try:
                x * 2
            finally:
                inner.stop()
            x - 1  # after the inner evaluation ended: the outer one still counts
        finally:
            outer.stop()
    assert _ops(inner) == {"aten::mul"}, inner.placement_native
    assert {"aten::add", "aten::mul", "aten::sub"} <= _ops(outer), outer.placement_native
    assert sum(s.ops for s in outer.steps) >= 3
    assert sum(s.ops for s in inner.steps) == 1
    modeled = {e.cost.name.split(".", 1)[0] for e in m.events}
    assert {"aten::add", "aten::mul", "aten::sub"} <= modeled, modeled
    assert perf_hook._observers == observers


def test_an_op_observer_sees_ops_only_while_added():
    seen = []

    def observer(op_name, device, args, outputs, host_ns, fallback):
        seen.append(op_name)

    x = torch.ones(4, device="neuron")
    with perf.measure():
        perf_hook.add_op_observer(observer)
        try:
            x.neg()
        finally:
            perf_hook.remove_op_observer(observer)
        x.abs()
    assert [n for n in seen if n.startswith("aten::neg")], seen
    assert not [n for n in seen if n.startswith("aten::abs")], seen
    perf_hook.remove_op_observer(observer)  # absent: nothing happens


def test_a_collector_lists_its_replacements_and_restores_them():
    autocast = torch.amp.autocast_mode.autocast
    before = (torch.Tensor.__dict__.get("item"), autocast.__enter__, torch.Tensor.item)
    assert "torch.Tensor.item" not in _scoped()
    outer = Collector([]).start()
    try:
        inner = Collector([]).start()
        inner.stop()
        during = _scoped()
    finally:
        outer.stop()
    for target in (
        "torch.Tensor.item",
        "torch.Tensor.__bool__",
        "torch.amp.autocast_mode.autocast.__enter__",
        "torch.amp.autocast_mode.autocast.__exit__",
        "torch_neuronx.eager.unsupported_features.report",
    ):
        assert target in during, sorted(during)
    assert not {t for t in _scoped() if t.startswith(("torch.", "torch_neuronx.eager"))}
    after = (torch.Tensor.__dict__.get("item"), autocast.__enter__, torch.Tensor.item)
    assert after == before


def test_the_reference_child_restores_torch_compile(py, tmp_path):
    script = tmp_path / "script.py"
    script.write_text(
        "import torch\n"
        "f = torch.compile(lambda t: t + 1)\n"
        "assert f(torch.ones(2)).tolist() == [2.0, 2.0]\n"
        "assert torch.compile.__name__ == '_passthrough_compile'\n"
    )
    py(f"""
        import torch
        from torch_neuronx.runtime import patches
        from torch_neuronx.evaluate import reference
        compile_, backward = torch.compile, torch.Tensor.backward
        out = reference.run_child("cpu", {str(script)!r}, [], [], False, None)
        assert out["status"] == "ok", out
        assert torch.compile is compile_ and torch.Tensor.backward is backward
        assert not [p for p in patches.installed() if p.scoped], patches.installed()
        """)
