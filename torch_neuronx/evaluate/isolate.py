"""The evaluated script runs in a forked worker, so that nothing it does can end the harness or
write the harness's report.

``torch-neuronx evaluate`` (the harness) forks one worker per run. The worker runs the script
under the collectors and builds the report's data; it hands that data back through a file and
ends with ``os._exit``, never returning into the harness's code. The harness alone writes the
report and chooses the exit status. So:

- ``os._exit(n)`` in the script ends the worker, not the harness: the worker's ``os._exit`` is
  wrapped (a scoped patch) to hand back what was collected until then, with the status as a
  blocking error, before it really exits;
- a signal that kills the worker (``SIGKILL``, ``SIGTERM``, ``os.abort()``) leaves no data:
  the harness writes a report saying which signal ended the script;
- a child the script forks (``os.fork()``, multiprocessing's fork start method) that runs to
  the end of the script, or raises out of it, ends there with ``os._exit`` instead of
  returning into the harness (which would write a second report over the first);
- Ctrl-C reaches the worker (the same process group), whose run ends ``interrupted``; the
  harness ignores it while it waits, so the partial report is still written.

Fork, not a fresh interpreter: the worker starts with torch already imported (no second
import) and with the harness's parsed arguments; the harness has run no op before it forks.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import sys
import tempfile
import traceback
from collections.abc import Callable

from torch_neuronx.runtime import patches

#: the reason of the scoped ``os._exit`` wrapper in the worker
HARD_EXIT_WATCH = (
    "torch_neuronx.evaluate: the worker hands back what it collected before the script's "
    "os._exit ends it"
)


_worker_pid: list = []  # the worker's pid, in the worker (a forked child of the script differs)
_real_exit: list = []  # os._exit itself, in the worker (where the script sees the wrapper)


def leave_if_forked(code: int) -> None:
    """Called where the script's run returns into the harness's code: a child the script
    forked ends here with ``code``, as a process running the script would end."""
    if _worker_pid and os.getpid() != _worker_pid[0]:
        sys.stdout.flush()
        sys.stderr.flush()
        _real_exit[0](code)


class Ended:
    """How a worker that handed back no data ended (the report's error type and message)."""

    def __init__(self, kind: str, message: str):
        self.kind, self.message = kind, message


def run(
    collect: Callable[[], dict],
    on_hard_exit: Callable[[int, str], dict],
) -> dict | Ended:
    """Runs ``collect()`` in a forked worker and returns the dict it returned (as JSON data),
    or :class:`Ended` when the worker died without handing one back.

    ``on_hard_exit(status, stack)`` builds the data when the script calls ``os._exit(status)``
    in the worker (``stack``: where it was called)."""
    # mkdtemp, not TemporaryDirectory: the latter's finalizer is an atexit function, which the
    # worker runs (for the script's own) and which would delete the result before it is read
    tmp = tempfile.mkdtemp(prefix="torch-neuronx-evaluate-")
    result = os.path.join(tmp, "result.json")
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the worker: never returns from here
        _worker(collect, on_hard_exit, result)
    try:
        old = signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the worker's to handle
        try:
            _, status = os.waitpid(pid, 0)
        finally:
            signal.signal(signal.SIGINT, old)
        if os.path.exists(result):
            with open(result) as f:
                return json.load(f)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if os.WIFSIGNALED(status):
        sig = signal.Signals(os.WTERMSIG(status)).name
        return Ended("signal", f"the script's process was ended by signal {sig}")
    code = os.waitstatus_to_exitcode(status)
    return Ended("exit", f"the script's process ended with status {code} and handed back no data")


def _worker(collect, on_hard_exit, result: str) -> None:
    worker = os.getpid()
    _worker_pid[:] = [worker]
    signal.signal(signal.SIGINT, signal.default_int_handler)
    real_exit = os._exit
    _real_exit[:] = [real_exit]
    code = 0
    try:

        def hard_exit(status=0):
            if os.getpid() == worker:  # a child the script forked exits as it asked
                try:
                    stack = "".join(traceback.format_stack()[:-1])
                    _hand_back(on_hard_exit(int(status), stack), result)
                except BaseException:  # noqa: BLE001  (the status still wins; the harness reports)
                    traceback.print_exc()
            real_exit(status)

        with patches.scoped(os, "_exit", hard_exit, reason=HARD_EXIT_WATCH):
            data = collect()
            if os.getpid() != worker:  # a forked child of the script came back here: end it
                real_exit(0)
            _hand_back(data, result)
        atexit._run_exitfuncs()  # the script's own atexit functions, as at a normal exit
    except BaseException:  # noqa: BLE001  (a harness bug: printed; the harness reports no data)
        if os.getpid() != worker:
            real_exit(1)
        traceback.print_exc()
        code = 70  # EX_SOFTWARE
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            real_exit(code)


def _hand_back(data: dict, path: str) -> None:
    from .session import _jsonable

    tmp = path + ".part"
    with open(tmp, "w") as f:
        json.dump(data, f, default=_jsonable)
    os.replace(tmp, path)  # whole or absent: the harness never reads half of it
