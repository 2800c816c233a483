"""Issue 25: a report says only what it can stand behind. Runs that trained nothing, raised,
or swallowed a compile failure are blocking readiness failures with file:line and no
projection; the gradient norm is the one the optimizer consumed; a re-run with other inputs
is not compared; impossible modeled figures are report errors; a verdict block leads."""

from __future__ import annotations

import math

import torch
from evaluate_support import SCRIPTS, marker_line

from torch_neuronx.evaluate import build, render_html, render_text, sanity, verdict


def _blocking_at(rep, script, marker):
    line = f"{SCRIPTS / script}:{marker_line(script, marker)}"
    return [i for i in rep["readiness"] if i["status"] == "fail" and line in i["item"]]


def _withheld(rep):
    pr = rep["projection"]
    assert pr["withheld"].startswith("withheld:") and pr["profiles"] == []
    assert pr["flops_per_step"] is None and pr["modeled_step_s_emulated"] is None


def test_optimizer_over_cpu_copies_is_blocking_and_nothing_is_projected(run_eval):
    r = run_eval("trains_nothing", "trains_nothing.py")
    rep = r.report
    assert rep["steps_completed"] == 0, r.explain()
    assert _blocking_at(rep, "trains_nothing.py", "opt"), rep["readiness"]
    _withheld(rep)
    assert rep["host_sync"]["in_steady_state_per_step"] is None
    assert rep["compilation"]["steady_state_step_s"] is None
    assert not any("No host sync" in i["item"] for i in rep["readiness"])
    v = rep["verdict"]["will_it_run"]
    assert v["answer"] == "no" and "trains_nothing.py:" in v["items"][0]
    assert rep["verdict"]["will_it_be_fast"]["answer"] == "unknown"


def test_swallowed_compile_failure_is_blocking(run_eval):
    r = run_eval("swallows_compile_error", "swallows_compile_error.py")
    rep = r.report
    assert rep["status"] == "ok" and rep["steps_completed"] == 3, r.explain()
    (f,) = rep["compile_failures"]
    assert f["type"] == "NeuronCompileError"
    assert _blocking_at(rep, "swallows_compile_error.py", "compile"), rep["readiness"]
    _withheld(rep)
    assert rep["verdict"]["will_it_run"]["answer"] == "no"


def test_script_that_raises_is_blocking_with_its_line_and_no_projection(run_eval):
    r = run_eval("raises", "raises.py")
    rep = r.report
    assert r.rc == 1 and rep["status"] == "error", r.explain()
    assert _blocking_at(rep, "raises.py", "raise"), rep["readiness"]
    _withheld(rep)
    # every output leads with the verdict: JSON (above), terminal and HTML
    lines = render_text.summary_lines(rep)
    assert lines[1].startswith("Will it run?") and "NO" in lines[1]
    html = render_html.render(rep)
    assert html.index("id='verdict'") < html.index("readiness")


def test_crashed_fake_trace_is_blocking_and_projects_nothing(run_eval):
    r = run_eval("fake_raises_early", "--fake", "raises_early.py")
    rep = r.report
    assert r.rc == 1 and rep["status"] == "error", r.explain()
    assert _blocking_at(rep, "raises_early.py", "raise"), rep["readiness"]
    fk = rep["fake_projection"]
    assert fk["withheld"].startswith("withheld:") and fk["profiles"] == []
    assert rep["verdict"]["will_it_run"]["answer"] == "no"
    assert rep["verdict"]["does_it_match"]["answer"] == "not compared"


def test_grad_norm_is_read_before_the_optimizer_changes_grad_in_place():
    """foreach Nesterov SGD adds the momentum into p.grad during step(): read after the step,
    the norm was ~1.9x the gradient's."""
    from torch_neuronx.evaluate import profiles
    from torch_neuronx.evaluate.collector import Collector

    torch.manual_seed(0)
    model = torch.nn.Linear(8, 4).to("neuron")
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True, foreach=True)
    x = torch.randn(16, 8, device="neuron")
    c = Collector(profiles.profiles(["trn2.3xlarge"], 2)).start()
    true = []
    try:
        for _ in range(3):
            opt.zero_grad()
            model(x).pow(2).mean().backward()
            with c.internal():
                true.append(
                    math.sqrt(sum(float(p.grad.pow(2).sum().cpu()) for p in model.parameters()))
                )
            opt.step()
    finally:
        c.stop()
    got = [s.grad_norm for s in c.steps if not s.partial]
    assert len(got) == 3
    for g, t in zip(got, true):
        assert abs(g - t) <= 1e-5 * t, (got, true)


def test_reference_with_other_inputs_is_not_compared_not_failed():
    tol = {"loss": 1e-4, "grad_norm": 1e-3, "output": 1e-3}
    c = type("C", (), {"float64": build_sites(), "autocast": build_sites(), "steps": []})()
    runs = {
        "neuron_eager": {"loss": [2.0, 1.5], "grad_norm": [1.0, 0.5]},
        "reference": {"loss": [2.7, 1.1], "grad_norm": [3.0, 0.1]},
    }
    nu = build.numerics(c, runs, tol)
    assert nu["verdict"] == "not compared" and nu["comparisons"] == []
    assert "the reference run's inputs differ" in nu["verdict_reason"]
    v = verdict.build({"numerics": nu, "readiness": []})["does_it_match"]
    assert v["answer"] == "not compared" and "inputs differ" in v["detail"]
    runs["reference"]["loss"][0] = 2.0  # same inputs: compared, and the later step fails
    nu = build.numerics(c, runs, tol)
    assert nu["verdict"] == "fail"
    assert verdict.build({"numerics": nu})["does_it_match"]["answer"] == "no"
    nu = build.numerics(c, None, tol)
    assert verdict.build({"numerics": nu})["does_it_match"]["detail"] == "add --reference cpu"


def build_sites():
    from torch_neuronx.evaluate.collector import _Sites

    return _Sites()


def test_convolution_forward_counts_the_output_positions():
    from torch_neuronx.perf import clock

    got = []
    listener = lambda e: got.append((e.cost.name, e.cost.flops))  # noqa: E731
    clock.add_listener(listener)
    clock.acquire()
    try:
        x = torch.randn(2, 8, 16, 16, device="neuron")
        conv = torch.nn.Conv2d(8, 4, 3, padding=1, bias=False).to("neuron")
        conv(x)
    finally:
        clock.release()
        clock.remove_listener(listener)
    flops = [f for n, f in got if n == "aten::convolution"]
    # 2 x batch x Cout x Hout x Wout x Cin x k x k
    assert flops == [2 * 2 * 4 * 16 * 16 * 8 * 3 * 3], got


def test_modeled_throughput_above_peak_is_a_report_error_not_a_result():
    from torch_neuronx.evaluate import profiles

    (p,) = profiles.profiles(["trn2.3xlarge"], 2)
    peak = sanity.max_peak(p.target.core)
    flops = 10 * peak * 1e-3  # 10x the peak if the step took 1 ms
    row = sanity.check_row(
        build.projection_row(p, 1e-3, flops, {}, compiled_s=1e-3), flops, p.target.core
    )
    assert row["step_s"] is None and row["mfu"] is None and "report error" in row["report_error"]
    ok = sanity.check_row(build.projection_row(p, 1.0, flops, {}), flops, p.target.core)
    assert ok["step_s"] == 1.0 and "report_error" not in ok
    assert sanity.six_nd(6e9, 1e6, 1000)["counted_over_six_n_d"] == 1.0
