"""Issue 28 item 4: the evaluated script cannot take the harness down. Before, ``os._exit(3)``
ended ``torch-neuronx evaluate`` itself (no report, and 3 is evaluate's own --fail-on status),
a SIGKILL left no report, and a child the script forked returned into the harness and wrote
its own report over the parent's after the command had exited 0."""

from __future__ import annotations

import os
import time

from evaluate_support import marker_line


def test_os_exit_in_the_script_is_a_blocking_error_in_a_report(run_eval):
    r = run_eval("os_exit", "ends_itself.py", "os_exit")
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


def test_a_signal_that_kills_the_script_still_gives_a_report(run_eval):
    r = run_eval("sigkill", "ends_itself.py", "sigkill")
    assert r.rc == 1, r.explain()
    rep = r.report
    assert rep["status"] == "error" and rep["error"]["type"] == "signal"
    assert "ended by signal SIGKILL" in rep["error"]["message"]
    assert rep["readiness"][0]["status"] == "fail"


def test_a_forked_child_never_returns_into_the_harness(run_eval, tmp_path):
    child_pid_file = tmp_path / "child.pid"
    r = run_eval("fork", "ends_itself.py", "fork", str(child_pid_file))
    assert r.rc == 0, r.explain()
    child = int(child_pid_file.read_text())
    for _ in range(600):  # the child ends on its own; wait until it has (not a timing check)
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"the script's child {child} is still running")
    rep = r.report  # the parent's report, not one the child wrote over it
    assert rep["status"] == "ok" and rep["steps_completed"] == 1, rep["error"]
    assert "raised in the child" not in (r.out / "report.json").read_text()
    assert "raised in the child" not in (r.out / "report.html").read_text()
    assert "Traceback" not in r.stderr, r.explain()
