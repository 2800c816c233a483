"""The model-zoo sweep's per-model limit counts CPU seconds (a starved worker on a loaded
machine is not a slow model), and a worker that dies is that model's failure, not the sweep's."""

import os
import sys
import time

from torch_neuronx.testing.model_zoo import policy, report, sweep, train_check


def test_cpu_seconds_counts_this_process_work():
    before = sweep._cpu_seconds(os.getpid())
    end = time.process_time() + 0.3
    while time.process_time() < end:  # busy: CPU time, not wall time, must grow
        pass
    assert sweep._cpu_seconds(os.getpid()) - before >= 0.2


def test_cpu_seconds_of_a_missing_process_is_zero():
    assert sweep._cpu_seconds(2**22 + 12345) == 0.0


def test_a_worker_that_dies_fails_its_model_only():
    (rows,) = list(sweep.run_chunk(["nosuchsuite:model"], ("eager",), timeout=120.0))
    assert [r["status"] for r in rows] == ["fail"]
    assert rows[0]["model"] == "nosuchsuite:model"
    assert "unknown suite" in rows[0]["detail"]


def test_idle_seconds_grow_on_an_idle_machine_only_as_cores_idle():
    before = sweep._idle_seconds()
    time.sleep(0.2)
    after = sweep._idle_seconds()
    assert 0.0 <= after - before <= 0.2 * (os.cpu_count() or 1) + 0.05


def test_wall_bound_before_the_cpu_limit_is_starved_unless_the_machine_sat_idle():
    # 100 of 600 CPU s in 2,400 s, the machine never idle long enough for the other 500 s:
    # starved (not recorded, a rerun tries it); idle for 3,000 CPU s meanwhile: it stalled
    (starved,) = sweep._over_wall("timm:x", ("compiled",), 600.0, 100.0, 2400.0, 40.0)
    assert starved["status"] == sweep.STARVED and "starved: 100 CPU s" in starved["detail"]
    (stalled,) = sweep._over_wall("timm:x", ("compiled",), 600.0, 100.0, 2400.0, 3000.0)
    assert stalled["status"] == "timeout" and "stalled" in stalled["detail"]


def test_starved_rows_are_not_written(tmp_path, monkeypatch):
    def chunk(models, modes, timeout):
        yield sweep._over_wall(models[0], modes, timeout, 1.0, 4 * timeout, 0.0)

    monkeypatch.setattr(sweep, "run_chunk", chunk)
    results = tmp_path / "r.jsonl"
    args = ["--models", "timm:x", "--modes", "compiled", "--results", str(results), "--no-write"]
    assert sweep.main(args) == 0
    assert not results.exists() or results.read_text() == ""


def _dying_worker(phases: list[str]):
    """A worker command that names `phases` of its first model, as train_check.check does,
    then aborts like a heap corruption (SIGABRT)."""
    lines = "".join(f"print({sweep._PHASE + p!r}, flush=True)\n" for p in phases)
    script = lines + "import os\nos.abort()\n"
    return lambda models, modes: [sys.executable, "-c", script]


def test_a_crash_in_the_cpu_reference_is_cpu_error(monkeypatch):
    # timm:fastvit_t8: CPU's own convolution backward aborts (oneDNN #6035, docs/eager.md)
    monkeypatch.setattr(sweep, "_worker_command", _dying_worker([train_check.CPU_REFERENCE]))
    (rows,) = list(sweep.run_chunk(["timm:x"], ("eager", "compiled"), timeout=120.0))
    assert [r["status"] for r in rows] == ["cpu_error", "cpu_error"]
    assert rows[0]["detail"].startswith("CPU reference crashed: worker exited with -6")


def test_a_crash_on_the_device_fails_the_model(monkeypatch):
    phases = [train_check.CPU_REFERENCE, train_check.DEVICE + "eager"]
    monkeypatch.setattr(sweep, "_worker_command", _dying_worker(phases))
    (rows,) = list(sweep.run_chunk(["timm:x"], ("eager",), timeout=120.0))
    assert [r["status"] for r in rows] == ["fail"]
    assert rows[0]["detail"].startswith("crash (in device eager): worker exited with -6")


def test_check_names_its_phases_in_order():
    import torch

    def build():
        torch.manual_seed(0)
        return torch.nn.Linear(4, 2), {"input": torch.randn(3, 4)}

    seen: list[str] = []
    train_check.check("t:linear", build, modes=("eager",), device="cpu", phase=seen.append)
    assert seen == [train_check.CPU_REFERENCE, train_check.DEVICE + "eager"]


def test_a_timeout_keeps_the_rows_of_the_modes_already_reported(monkeypatch):
    # a worker reports its model's eager row, then spins in the compiled mode past the limit:
    # the eager result stays (the whole model used to be marked timeout, eager included)
    row = {"model": "timm:x", "mode": "eager", "status": "pass", "detail": ""}
    script = (
        f"import json\nprint({sweep._PREFIX!r} + json.dumps({row!r}), flush=True)\n"
        "while True:\n    pass\n"
    )
    monkeypatch.setattr(
        sweep, "_worker_command", lambda models, modes: [sys.executable, "-c", script]
    )
    (rows,) = list(sweep.run_chunk(["timm:x"], ("eager", "compiled"), timeout=1.5))
    assert [(r["mode"], r["status"]) for r in rows] == [("eager", "pass"), ("compiled", "timeout")]


def test_check_tells_each_outcome_as_it_is_known():
    import torch

    def build():
        torch.manual_seed(0)
        return torch.nn.Linear(4, 2), {"input": torch.randn(3, 4)}

    told = []
    outcomes = train_check.check(
        "t:linear", build, modes=("eager",), device="cpu", on_outcome=told.append
    )
    assert told == outcomes and told[0].status == "pass"


def test_a_mode_the_policy_excludes_is_not_run_and_its_row_says_why(tmp_path, monkeypatch):
    # hf:funnel's compiled mode: CPU Inductor itself cannot compile it within the limit
    why = "compiles too long on CPU Inductor too"
    monkeypatch.setitem(policy.EXCLUDED_MODES, ("timm:x", "compiled"), why)
    ran = []

    def chunk(models, modes, timeout):
        ran.append((tuple(models), modes))
        yield [{"model": models[0], "mode": "eager", "status": "pass", "detail": ""}]

    monkeypatch.setattr(sweep, "run_chunk", chunk)
    results = tmp_path / "r.jsonl"
    args = ["--models", "timm:x", "--results", str(results), "--no-write"]
    assert sweep.main(args) == 0
    assert ran == [(("timm:x",), ("eager",))]
    rows = {r["mode"]: r for r in sweep._rows(str(results))}
    assert rows["compiled"]["status"] == sweep.EXCLUDED and rows["compiled"]["detail"] == why
    assert rows["eager"]["status"] == "pass"
    # the report counts it as excluded and gives the reason, not an earlier row's timeout
    old = {"model": "timm:x", "mode": "compiled", "status": "timeout", "detail": "no result"}
    text = report.section([rows["eager"], old], {})
    assert "| timm:x | pass | excluded |" in text and f"compiled excluded: {why}" in text
    assert "no result" not in text
    assert sweep.main(args) == 0 and ran == [(("timm:x",), ("eager",))]  # both pairs done


def test_a_model_with_a_long_limit_gets_it(monkeypatch):
    # timm:nasnetalarge: Inductor's compile alone takes most of the default limit; a worker
    # that spins stops at the model's own limit, which its timeout row names
    monkeypatch.setitem(policy.LONG_LIMITS, "timm:x", (3.0, "compiles long"))
    script = "while True:\n    pass\n"
    monkeypatch.setattr(
        sweep, "_worker_command", lambda models, modes: [sys.executable, "-c", script]
    )
    (rows,) = list(sweep.run_chunk(["timm:x"], ("eager",), timeout=1.0))
    assert rows[0]["status"] == "timeout"
    assert rows[0]["detail"].startswith("no result within 3 CPU s ("), rows[0]["detail"]
    assert policy.limit("timm:y", 1.0) == 1.0 and policy.limit("timm:x", 5.0) == 5.0
