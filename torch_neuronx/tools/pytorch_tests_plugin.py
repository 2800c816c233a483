"""pytest plugin used by ``tools/pytorch_tests.py`` when it runs PyTorch's own test files.

It is loaded by file name (``-p pytorch_tests_plugin`` with this folder on ``PYTHONPATH``), not as
part of the ``torch_neuronx`` package, and imports nothing from it: the CPU baseline runs with the
backend's autoload switched off, and importing the package would load the backend anyway.

What it adds to pytest:

- ``--ntx-record FILE``: one JSON line per test start and per test result, flushed as written,
  so that the results of a run that crashes (a segfault, an abort) are not lost and the test
  that was running when it died is known;
- ``--ntx-skip FILE``: node ids (one per line) to deselect, so a run can resume after a crash;
- ``--ntx-test-timeout S``: a per-test time limit (SIGALRM in the main thread): the test fails
  with ``TimeoutError`` instead of stalling the whole file;
- ``expecttest``: ``torch.testing._internal.common_utils`` imports it but the torch wheel does
  not depend on it; when it is missing a stand-in is installed (its only method skips the test
  that calls it, so such a test is counted as skipped on both devices).
"""

from __future__ import annotations

import json
import signal
import sys
import types
import unittest

import pytest


def _ensure_expecttest() -> None:
    try:
        import expecttest  # noqa: F401
    except ImportError:
        mod = types.ModuleType("expecttest")

        class TestCase(unittest.TestCase):
            def assertExpectedInline(self, *args, **kwargs):
                raise unittest.SkipTest("expecttest is not installed")

        mod.TestCase = TestCase
        sys.modules["expecttest"] = mod


_ensure_expecttest()

_record = None
_timeout = 0.0


def pytest_addoption(parser):
    g = parser.getgroup("torch_neuronx pytorch_tests")
    g.addoption("--ntx-record", default=None, help="JSON-lines file of test starts and results")
    g.addoption("--ntx-skip", default=None, help="file of node ids to deselect")
    g.addoption("--ntx-test-timeout", type=float, default=0.0, help="per-test limit in seconds")


def pytest_configure(config):
    global _record, _timeout
    path = config.getoption("--ntx-record")
    if path:
        _record = open(path, "a", buffering=1)  # line-buffered: survives a crash of the process
    _timeout = config.getoption("--ntx-test-timeout") or 0.0


def pytest_unconfigure(config):
    if _record is not None:
        _record.close()


def _write(obj) -> None:
    if _record is not None:
        _record.write(json.dumps(obj) + "\n")
        _record.flush()


def pytest_collection_modifyitems(config, items):
    path = config.getoption("--ntx-skip")
    if not path:
        return
    with open(path) as f:
        skip = {line.strip() for line in f if line.strip()}
    keep = [it for it in items if it.nodeid not in skip]
    gone = [it for it in items if it.nodeid in skip]
    if gone:
        config.hook.pytest_deselected(items=gone)
        items[:] = keep


def pytest_runtest_logstart(nodeid, location):
    _write({"start": nodeid})


def _message(report) -> str:
    lr = report.longrepr
    if lr is None:
        return ""
    if isinstance(lr, tuple):  # a skip: (file, line, reason)
        return str(lr[2])
    crash = getattr(lr, "reprcrash", None)
    if crash is not None:
        # PyTorch appends how to rerun the test; the cause is what comes before
        return crash.message.split("\n\nTo execute this test")[0]
    return str(lr).strip().splitlines()[-1] if str(lr).strip() else ""


def pytest_runtest_logreport(report):
    if report.when == "call" or report.outcome != "passed":
        outcome = report.outcome
        if hasattr(report, "wasxfail"):
            outcome = "xfailed" if report.skipped else "xpassed"
        elif report.when != "call" and report.failed:
            outcome = "error"
        _write(
            {
                "id": report.nodeid,
                "outcome": outcome,
                "when": report.when,
                "msg": _message(report)[:2000],
            }
        )


def _alarm(signum, frame):
    raise TimeoutError(f"test exceeded the per-test limit of {_timeout:g} s (--ntx-test-timeout)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    if _timeout > 0:
        old = signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, _timeout)
    try:
        yield
    finally:
        if _timeout > 0:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
