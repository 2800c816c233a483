"""One instrumentation seam (issue 25, item 6): one script runner, one step tracker, one report
builder with one gate for every mode. Each check fails when a second one appears (as
tests/perf/test_vocabulary.py does for vocabularies); the behavioural checks show the modes
agree where the old copies disagreed (the memory gate)."""

from __future__ import annotations

import ast
from pathlib import Path

import torch

import torch_neuronx
from torch_neuronx.eager import op_policy
from torch_neuronx.evaluate import build, report, steps, verdict

PKG = Path(torch_neuronx.__file__).resolve().parent
EVALUATE = PKG / "evaluate"


def _calls_and_defs(path: Path):
    """(names called or imported, functions defined) of a module, with line numbers."""
    tree = ast.parse(path.read_text(), str(path))
    used, defined = [], []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            used.append((node.attr, node.lineno))
        elif isinstance(node, ast.Name):
            used.append((node.id, node.lineno))
        elif isinstance(node, ast.alias):
            used.append((node.name.split(".")[-1], getattr(node, "lineno", 0)))
            used.append((node.name.split(".")[0], getattr(node, "lineno", 0)))
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defined.append((node.name, node.lineno))
    return used, defined


def _where(names: set, *, defined: bool = False, files=None) -> list:
    out = []
    for f in sorted(files or PKG.rglob("*.py")):
        used, defs = _calls_and_defs(f)
        for name, line in defs if defined else used:
            if name in names:
                out.append(f"{f.relative_to(PKG)}:{line}: {name}")
    return out


def _only(found: list, allowed: set) -> list:
    return [x for x in found if x.split(":")[0] not in allowed]


def test_one_script_runner():
    """Only evaluate/runner.py runs a user's script (runpy), in every mode."""
    assert _only(_where({"runpy", "run_path"}), {"evaluate/runner.py"}) == []


def test_one_step_tracker():
    """Only evaluate/steps.py delimits steps (the optimizer post-step hook), reads the gradient
    norm or defines a step tracker; fake.py's pre-step hook only splits its traced graph."""
    assert _only(_where({"register_optimizer_step_post_hook"}), {"evaluate/steps.py"}) == []
    assert (
        _only(
            _where({"register_optimizer_step_pre_hook"}), {"evaluate/steps.py", "evaluate/fake.py"}
        )
        == []
    )
    defs = _where(
        {"grad_sq", "_grad_norm", "StepTracker", "_StepRecorder", "StepLimitReached"},
        defined=True,
        files=EVALUATE.glob("*.py"),
    )
    assert _only(defs, {"evaluate/steps.py"}) == []


def test_one_report_builder_and_one_gate():
    """Only evaluate/report.py starts a report (build.header), completes it (readiness, gate,
    verdict) or defines a --fail-on gate."""
    assert (
        _only(
            _where({"header"}, files=EVALUATE.glob("*.py")),
            {"evaluate/report.py", "evaluate/build.py"},
        )
        == []
    )
    gates = _where({"gate", "readiness"}, defined=True, files=EVALUATE.glob("*.py"))
    assert sorted(x.split(":")[0] for x in gates) == [
        "evaluate/build.py",  # readiness of the sections (report.readiness adds the fake items)
        "evaluate/report.py",
        "evaluate/report.py",
    ]
    stores = []
    for f in sorted(EVALUATE.glob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if (
                isinstance(node, ast.Subscript)
                and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name)
                and node.value.id in ("rep", "merged", "report")  # a report, not a section
                and isinstance(node.slice, ast.Constant)
                and node.slice.value in ("readiness", "fail_on", "verdict")
            ):
                stores.append(f"{f.relative_to(PKG)}:{node.lineno}: [{node.slice.value!r}]")
    assert _only(stores, {"evaluate/report.py"}) == []


def test_one_list_of_data_dependent_ops():
    """evaluate/ names no data-dependent op itself: both modes ask op_policy."""
    names = {n.split("::")[1] for n in op_policy.DATA_DEPENDENT} | set(op_policy.DATA_DEPENDENT)
    bad = []
    for f in sorted(EVALUATE.glob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
                found = [
                    e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in names
                ]
                if len(found) >= 2:
                    bad.append(f"{f.relative_to(PKG)}:{node.lineno}: {found}")
    assert bad == []


def _fit_row(profile, ok):
    return {"profile": profile, "fits_one_core": ok, "fsdp_note": ""}


def test_memory_gate_is_the_same_rule_in_every_mode():
    """The measured peak and the fake layout's estimate: the gate holds exactly when the verdict
    says it fits no profile (the two builders disagreed: emulated profile vs any profile)."""
    measured_no = {
        "memory": {"peak_allocated": 10, "fit": [_fit_row("a", False), _fit_row("b", False)]}
    }
    measured_one = {
        "memory": {"peak_allocated": 10, "fit": [_fit_row("a", False), _fit_row("b", True)]}
    }
    fake_no = {"fake_projection": {"profiles": [{"profile": "a", "fits": False}]}}
    fake_one = {"fake_projection": {"profiles": [{"profile": "a", "fits": True}]}}
    for rep, holds in (
        (measured_no, True),
        (measured_one, False),
        (fake_no, True),
        (fake_one, False),
    ):
        got = report.gate(rep, ["memory"])
        assert bool(got) == holds, (rep, got)
        assert (verdict._fit(rep)["answer"] == "no") == holds
        if holds:
            assert got[0].startswith("memory: does not fit one core of any profile")
    # a crashed trace or a run that allocated nothing: not determined, and the gate does not hold
    crashed = {
        "fake_projection": {"withheld": "withheld: the fake trace did not complete", "profiles": []}
    }
    assert report.gate(crashed, ["memory"]) == []
    assert verdict._fit(crashed)["answer"] == "unknown"
    assert "not determined" in verdict._fit(crashed)["detail"]
    assert (
        verdict._fit({"memory": {"peak_allocated": 0, "fit": [_fit_row("a", True)]}})["answer"]
        == "unknown"
    )


def test_fallback_gate_reads_placement_in_every_mode():
    for rep in (
        {"placement": {"fallback_calls": 3}},  # measured
        {"mode": "fake", "placement": {"fallback_calls": 3, "total_calls": 9}},  # --fake
    ):
        assert report.gate(rep, ["fallback"]) == ["fallback: 3 CPU-fallback calls"]


def test_no_op_is_no_pass_for_placement():
    """'Every op ran natively' needs an op (issue 25 item 9: it was said when no op ran)."""
    items = build.readiness({"placement": {"fallback_calls": 0, "total_calls": 0}})
    assert not any("natively" in i["item"] for i in items)
    items = build.readiness({"placement": {"fallback_calls": 0, "total_calls": 5}})
    assert any(i["item"] == "Every op ran natively on the device" for i in items)


def test_step_tracker_counts_device_optimizers_reads_norm_before_the_step_and_stops():
    """The tracker every mode uses: a CPU twin's steps do not count, the gradient norm is read
    before the step (Nesterov SGD's foreach step adds momentum into p.grad), --steps stops."""
    w_dev = torch.nn.Parameter(torch.ones(4, device="neuron"))
    w_cpu = torch.nn.Parameter(torch.ones(4))
    dev = torch.optim.SGD([w_dev], lr=0.1, momentum=0.9, nesterov=True, foreach=True)
    cpu = torch.optim.SGD([w_cpu], lr=0.1)
    seen = []
    tr = steps.StepTracker(steps_limit=2, on_step=lambda loss, gn: seen.append((loss, gn)))
    stopped = False
    with tr:
        try:
            for _ in range(3):
                for w, opt in ((w_dev, dev), (w_cpu, cpu)):
                    loss = (w * 2.0).sum()
                    tr.saw_backward(loss)
                    loss.backward()
                    opt.step()
                    opt.zero_grad()
        except steps.StepLimitReached:
            stopped = True
    assert stopped and tr.steps == 2 and len(seen) == 2
    assert tr.optimizers == [dev] and tr.host_optimizers == [cpu]
    assert all(gn == 4.0 for _, gn in seen)  # |grad| = |2 x ones(4)| = 4, before momentum
    assert tr.counted_ordinals() == [0]
    assert steps.current() is None  # stopped: evaluate.step() is a no-op again
