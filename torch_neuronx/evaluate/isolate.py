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
- its exit status is kept: such a child ends with the status ``python script.py`` would have
  given it (``sys.exit(n)`` -> ``n``, an exception -> 1), so a parent that waits for it sees it;
- ``SIGTERM``, ``SIGINT`` and ``SIGHUP`` sent to the harness are passed on to the worker (the
  harness does not die of them and leave the worker running): the harness waits for the worker
  to end, then writes a report saying the run was interrupted by that signal. Ctrl-C at a
  terminal reaches both (one process group) and the harness passes it on as well; the worker
  takes a second ``SIGINT`` within :data:`SIGINT_SAME_S` of the one that raised
  ``KeyboardInterrupt`` as the same interrupt (the terminal's and the harness's copy);
- if the harness itself dies (``SIGKILL``), the worker is killed with it (Linux's
  parent-death signal), instead of running on unobserved.

Every mode runs through :func:`run` (the instrumented run with or without ``--reference``, and
``--fake``).

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
import time
import traceback
from collections.abc import Callable

from torch_neuronx.runtime import patches

#: the reason of the scoped ``os._exit`` wrapper in the worker
HARD_EXIT_WATCH = (
    "torch_neuronx.evaluate: the worker hands back what it collected before the script's "
    "os._exit ends it"
)


#: signals sent to the harness that it passes on to the worker
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
#: a SIGINT this soon after the one that raised KeyboardInterrupt in the worker is the same one
SIGINT_SAME_S = 1.0

_worker_pid: list = []  # the worker's pid, in the worker (a forked child of the script differs)
_real_exit: list = []  # os._exit itself, in the worker (where the script sees the wrapper)


def leave_if_forked(code: int) -> None:
    """Called where the script's run returns into the harness's code: a child the script
    forked ends here with ``code`` (the status ``python script.py`` would have ended it with,
    :func:`exit_code`), as a process running the script would end."""
    if _worker_pid and os.getpid() != _worker_pid[0]:
        sys.stdout.flush()
        sys.stderr.flush()
        _real_exit[0](code)


def exit_code(exc: BaseException | None) -> int:
    """The status a process running the script would end with, after ``exc`` left the script
    (``None``: it ran to its end), as the interpreter picks it."""
    if exc is None:
        return 0
    if isinstance(exc, SystemExit):
        code = exc.code
        if code is None:
            return 0
        if isinstance(code, int) and not isinstance(code, bool):
            return code & 0xFF
        if isinstance(code, bool):
            return int(code)
        print(code, file=sys.stderr)  # as the interpreter prints a non-integer sys.exit value
        return 1
    if isinstance(exc, KeyboardInterrupt):
        return 128 + signal.SIGINT
    return 1


class Ended:
    """How a worker that handed back no data ended (the report's error type and message)."""

    def __init__(self, kind: str, message: str):
        self.kind, self.message = kind, message


def run(
    collect: Callable[[], dict],
    on_hard_exit: Callable[[int, str], dict],
) -> tuple[dict | Ended, str | None]:
    """Runs ``collect()`` in a forked worker. Returns the dict it returned (as JSON data), or
    :class:`Ended` when the worker died without handing one back; and the name of the first
    signal the harness received (and passed on) while it waited, else None.

    ``on_hard_exit(status, stack)`` builds the data when the script calls ``os._exit(status)``
    in the worker (``stack``: where it was called)."""
    # mkdtemp, not TemporaryDirectory: the latter's finalizer is an atexit function, which the
    # worker runs (for the script's own) and which would delete the result before it is read
    tmp = tempfile.mkdtemp(prefix="torch-neuronx-evaluate-")
    result = os.path.join(tmp, "result.json")
    sys.stdout.flush()
    sys.stderr.flush()
    harness = os.getpid()
    worker: list = []  # its pid, once forked
    received: list = []  # the signals the harness got while the worker ran

    def forward(sig, frame):  # in the harness: the worker is the one to end
        if os.getpid() != harness:  # in the worker, before it put the dispositions back
            return
        received.append(signal.Signals(sig).name)
        if worker:
            try:
                os.kill(worker[0], sig)
            except ProcessLookupError:  # already ended; waitpid collects it
                pass

    # installed before the fork, so that no signal between the fork and the wait ends the
    # harness; the worker puts the previous dispositions back first thing
    # (a signal the harness was started ignoring, as under nohup, stays ignored by both)
    old = {s: signal.getsignal(s) for s in FORWARDED}
    for s in FORWARDED:
        if old[s] is not signal.SIG_IGN:
            signal.signal(s, forward)
    try:
        pid = os.fork()
        if pid == 0:  # the worker: never returns from here
            _worker(collect, on_hard_exit, result, old, harness)
        worker.append(pid)
        for name in list(received):  # arrived before the pid was known
            os.kill(pid, signal.Signals[name])
        _, status = os.waitpid(pid, 0)  # a handled signal resumes the wait (PEP 475)
    finally:
        for s, h in old.items():
            if h is not None:
                signal.signal(s, h)
    got = received[0] if received else None
    try:
        if os.path.exists(result):
            with open(result) as f:
                return json.load(f), got
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if os.WIFSIGNALED(status):
        sig = signal.Signals(os.WTERMSIG(status)).name
        return Ended("signal", f"the script's process was ended by signal {sig}"), got
    code = os.waitstatus_to_exitcode(status)
    message = f"the script's process ended with status {code} and handed back no data"
    return Ended("exit", message), got


def _worker(collect, on_hard_exit, result: str, dispositions: dict, harness: int) -> None:
    worker = os.getpid()
    _worker_pid[:] = [worker]
    real_exit = os._exit
    _die_with(harness, real_exit)
    for s, h in dispositions.items():
        if h is not None:
            signal.signal(s, h)
    if dispositions.get(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_sigint)
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

        prepare_imports()
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


def prepare_imports() -> None:
    """Lets the script import what ``python script.py`` would import here: the only
    torchvision built for this torch on PyPI is a CUDA build whose extension fails to load
    beside the CPU torch, and its import then dies, taking timm with it.
    ``runtime.torchvision_shim.install()`` does nothing unless that extension fails to load
    (docs/decisions.md, "torchvision in the evaluated script")."""
    from torch_neuronx.runtime import torchvision_shim

    torchvision_shim.install()


_last_sigint: list = [None]


def _on_sigint(sig, frame):
    """The worker's Ctrl-C: ``KeyboardInterrupt``, once for the terminal's copy and the copy the
    harness passed on (they arrive together; see the module doc)."""
    now = time.monotonic()
    if _last_sigint[0] is not None and now - _last_sigint[0] < SIGINT_SAME_S:
        return
    _last_sigint[0] = now
    raise KeyboardInterrupt


def _die_with(harness: int, real_exit) -> None:
    """Linux: the worker gets SIGKILL when the harness dies (it cannot report without it)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the worker may outlive a killed harness
        return
    if os.getppid() != harness:  # the harness died before prctl took effect
        real_exit(128 + signal.SIGKILL)


def _hand_back(data: dict, path: str) -> None:
    from .report import jsonable

    tmp = path + ".part"
    with open(tmp, "w") as f:
        json.dump(data, f, default=jsonable)
    os.replace(tmp, path)  # whole or absent: the harness never reads half of it
