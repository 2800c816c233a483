"""Issue 28 item 4: the evaluated script cannot take the harness down. Before, ``os._exit(3)``
ended ``torch-neuronx evaluate`` itself (no report, and 3 is evaluate's own --fail-on status),
a SIGKILL left no report, and a child the script forked returned into the harness and wrote
its own report over the parent's after the command had exited 0. Every mode runs the script in
the worker, ``--fake`` included; a signal sent to the harness alone is passed on to the worker
(before, SIGTERM ended the harness with no report and left the worker running)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import evaluate_support
import pytest
from evaluate_support import SCRIPTS, marker_line

from torch_neuronx.runtime import env
from torch_neuronx.testing.child import child_env

MODES = {"plain": (), "fake": ("--fake",)}


def _gone(pid: int, tries: int = 600) -> bool:
    """Whether ``pid`` has ended (waits for it, a bounded number of polls: not a timing check)."""
    for _ in range(tries):
        try:
            os.kill(pid, 0)
            with open(f"/proc/{pid}/stat") as f:  # a zombie nobody reaps has ended too
                if f.read().rpartition(")")[2].split()[0] == "Z":
                    return True
        except (ProcessLookupError, FileNotFoundError):
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("mode", MODES)
def test_os_exit_in_the_script_is_a_blocking_error_in_a_report(run_eval, mode):
    r = run_eval(f"os_exit-{mode}", *MODES[mode], "ends_itself.py", "os_exit")
    assert r.rc == 1, r.explain()  # the script's error status, not 3 (--fail-on's)
    rep = r.report
    assert rep["status"] == "error" and rep["error"]["type"] == "os._exit"
    assert rep["error"]["message"] == "the script ended its process with os._exit(3)"
    line = marker_line("ends_itself.py", "os-exit")
    assert f'ends_itself.py", line {line}' in rep["error"]["traceback"]
    assert rep["readiness"][0] == {"status": "fail", "item": rep["error"]["message"]}
    # what was collected before the exit is kept
    assert rep["steps_completed"] == 1 and rep["touched_neuron"] is True
    assert (r.out / "report.html").exists()
    if mode == "fake":  # a trace the script cut short is no projection: withheld, with why
        assert rep["mode"] == "fake" and "did not complete" in rep["fake_projection"]["withheld"]
        assert "Fake projection withheld" in (r.out / "report.html").read_text()


@pytest.mark.parametrize(
    "mode",
    [
        "plain",
        pytest.param(
            "fake",
            marks=pytest.mark.skipif(
                not env.flag("TORCH_NEURONX_TEST_FULL"),
                reason="a killed worker is met by the harness alone, whatever the mode (CI "
                "runs --fake in the worker in the os._exit, fork and harness-signal tests): "
                "TORCH_NEURONX_TEST_FULL=1",
            ),
        ),
    ],
)
def test_a_signal_that_kills_the_script_still_gives_a_report(run_eval, mode):
    r = run_eval(f"sigkill-{mode}", *MODES[mode], "ends_itself.py", "sigkill")
    assert r.rc == 1, r.explain()
    rep = r.report
    assert rep["status"] == "error" and rep["error"]["type"] == "signal"
    assert "ended by signal SIGKILL" in rep["error"]["message"]
    assert rep["readiness"][0]["status"] == "fail"
    assert rep["mode"] == ("fake" if mode == "fake" else "script")


@pytest.mark.parametrize("mode", MODES)
def test_a_forked_child_never_returns_into_the_harness(run_eval, tmp_path, mode):
    child_pid_file = tmp_path / "child.pid"
    r = run_eval(f"fork-{mode}", *MODES[mode], "ends_itself.py", "fork", str(child_pid_file))
    assert r.rc == 0, r.explain()
    child = int(child_pid_file.read_text())
    assert _gone(child), f"the script's child {child} is still running"
    rep = r.report  # the parent's report, not one the child wrote over it
    assert rep["status"] == "ok" and rep["steps_completed"] == 1, rep["error"]
    assert "raised in the child" not in (r.out / "report.json").read_text()
    assert "raised in the child" not in (r.out / "report.html").read_text()
    assert "Traceback" not in r.stderr, r.explain()


def test_a_forked_child_keeps_its_own_exit_status(run_eval, tmp_path):
    status_file = tmp_path / "child.status"
    r = run_eval("fork_exit", "ends_itself.py", "fork_exit", str(status_file))
    assert r.rc == 0, r.explain()
    assert status_file.read_text() == "7"  # sys.exit(7) in the child (was 1)
    assert r.report["status"] == "ok"


@pytest.mark.parametrize(
    "mode,sig", [("plain", signal.SIGTERM), ("fake", signal.SIGINT)], ids=["plain", "fake"]
)
def test_a_signal_sent_to_the_harness_is_passed_on_and_reported(tmp_path, mode, sig):
    out, pid_file = tmp_path / "out", tmp_path / "worker.pid"
    e = child_env(None)
    e.setdefault("TORCH_NEURONX_NEFF_CACHE_DIR", str(tmp_path / "neff_cache"))
    e["OMP_NUM_THREADS"] = "1"
    cmd = [sys.executable, "-m", "torch_neuronx.tools.cli", "evaluate", "--out", str(out)]
    cmd += ["--quiet", *MODES[mode], "ends_itself.py", "sleep", str(pid_file)]
    # output to a file, not a pipe: a worker left running would hold a pipe open
    log = open(tmp_path / "log", "w")  # noqa: SIM115  (closed in finally)
    harness = subprocess.Popen(
        cmd,
        cwd=str(SCRIPTS),
        env=e,
        stdout=log,
        stderr=log,
        preexec_fn=evaluate_support.foreground_sigint,
    )
    worker = None
    try:
        for _ in range(2400):  # until the script runs (bounded polls, not a timing check)
            if pid_file.exists() or harness.poll() is not None:
                break
            time.sleep(0.1)
        assert pid_file.exists(), (tmp_path / "log").read_text()[-3000:]
        worker = int(pid_file.read_text())
        assert worker != harness.pid
        harness.send_signal(sig)  # the harness alone, not its process group
        harness.wait(timeout=120)
        assert harness.returncode == 128 + sig, (tmp_path / "log").read_text()[-3000:]
        assert _gone(worker, tries=50), "the worker is still running"
        rep = json.loads((out / "report.json").read_text())
        assert rep["status"] == "interrupted", rep["error"]
        assert rep["error"]["type"] == "interrupted"
        assert f"received {sig.name}" in rep["error"]["message"]
        assert rep["readiness"][0] == {"status": "fail", "item": rep["error"]["message"]}
        assert rep["mode"] == ("fake" if mode == "fake" else "script")
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait()
        log.close()
        if worker is not None and not _gone(worker, tries=1):
            os.kill(worker, signal.SIGKILL)
