"""Shared test fixtures. The neuron backend autoloads with `import torch`.

`make test` runs the suite on two pytest-xdist workers (`-n 2 --dist loadfile`); the hooks
below keep that run equivalent to a serial one (README, "Build time")."""

import os

import pytest

from torch_neuronx.testing import child

# Directories whose tests share work done once per session: under xdist each is one unit of
# work, run on one worker in its serial order. compile/ shares one NEFF cache (a graph that one
# test compiles is a cache hit for the next).
_ONE_WORKER_DIRS = ("tests/compile/",)
# evaluate/ shares each `torch-neuronx evaluate` run by its key (evaluate_support.py), but only
# these files use keys of another file ("tinygpt_eager", "raises", "interrupted",
# "fake_raises_early"): together they are one unit; every other evaluate file runs only keys of
# its own and is a unit of its own (one unit of all of evaluate/ was the suite's longest, a
# floor under its wall time). A file that starts sharing a key must join this group.
_SHARED_RUN_FILES = (
    "tests/evaluate/test_blocking_verdict.py",
    "tests/evaluate/test_cli_reports.py",
    "tests/evaluate/test_html.py",
    "tests/evaluate/test_presentation.py",
)
_SHARED_RUN_UNIT = "tests/evaluate/(shared runs)"
# ... except these files, which compile only with caches of their own (child processes, or
# directories they set themselves), so they gain nothing from the session's cache; as units of
# their own they balance the workers (about a third of compile/'s CPU time, measured).
_OWN_CACHE_FILES = (
    "tests/compile/test_cache.py",
    "tests/compile/test_compile_hardening.py",
    "tests/compile/test_compiled_memory.py",
)
# Units handed out before the rest: the longest measured on 2026-12-02 (README, "Build time"),
# roughly longest first. A long unit started last would leave the other worker idle at the end.
_LONGEST_FIRST = (
    "tests/compile/",
    "tests/evaluate/test_public_scripts.py",
    *_OWN_CACHE_FILES,
    _SHARED_RUN_UNIT,
)


def pytest_configure(config):
    count = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if count:
        # torch starts one intra-op thread per core in every worker; with a worker per core,
        # their OpenMP threads would spin against each other. One core's share each.
        import torch

        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
        torch.set_num_threads(max(1, (cores or os.cpu_count() or 1) // int(count)))


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist; without it, never called
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadfile` (a file's tests run in order on one worker, its module fixtures set
    up once), with each directory of _ONE_WORKER_DIRS one unit. xdist's own `loadgroup` marks
    cannot do this: with pytest 9 its renaming of test ids has no effect."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class _Scheduling(LoadFileScheduling):
        def _assign_work_unit(self, node) -> None:
            # xdist hands units out largest first by number of tests; _LONGEST_FIRST are the
            # largest by time, so they go first.
            if not getattr(self, "_ordered", False):
                self._ordered = True
                for scope in reversed(_LONGEST_FIRST):
                    if scope in self.workqueue:
                        self.workqueue.move_to_end(scope, last=False)
            super()._assign_work_unit(node)

        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            if path in _OWN_CACHE_FILES:
                return super()._split_scope(nodeid)
            if path in _SHARED_RUN_FILES:
                return _SHARED_RUN_UNIT
            for directory in _ONE_WORKER_DIRS:
                if nodeid.startswith(directory):
                    return directory
            return super()._split_scope(nodeid)

    return _Scheduling(config, log)


@pytest.fixture
def py():
    """Runs code in a fresh interpreter; the code asserts its own expectations (a failure
    shows the child's traceback). Returns the child's stdout. See torch_neuronx.testing.child."""
    return child.run_ok
