"""The one script runner of every mode: the instrumented run, ``--fake`` and the
``--reference`` re-runs all run the user's unmodified script through :func:`run`.

The script runs in the calling process (``runpy``, as ``python script.py`` would: its own
``sys.argv``, ``__name__ == "__main__"``, its folder first on ``sys.path`` so that
``import model`` beside it works; the CLI calls this in a forked worker, isolate.py, so the
script cannot end the harness), so every hook sees it. The loss of a step is the tensor the
script last called ``backward()`` on: a scoped ``torch.Tensor.backward`` wrapper hands it to
the step tracker (steps.py; read by the report, not counted as the script's host sync).

Outcomes (:class:`Outcome`): the script finishes (status ``ok``); ``--steps N`` is reached
(``ok``, stopped there); it raises or exits non-zero (``error``, with the traceback); Ctrl-C
(``interrupted``). ``os._exit`` and signals: isolate.py."""

from __future__ import annotations

import dataclasses
import os
import runpy
import sys
import traceback

import torch

from torch_neuronx.runtime import patches

from . import callsite
from .steps import StepLimitReached, StepTracker

#: the reason of the scoped ``torch.Tensor.backward`` wrapper
LOSS_WATCH = "torch_neuronx.evaluate: remembers the scalar each step calls backward() on (the loss)"


@dataclasses.dataclass
class Outcome:
    status: str = "ok"  # ok | error | interrupted
    error: dict | None = None  # type, message, traceback
    left: BaseException | None = None  # what left the script (None: it ran to its end)
    stopped_at_step: int | None = None  # --steps N reached at this step

    @property
    def exit_code(self) -> int:
        """The status ``python script.py`` would have ended with (isolate.exit_code)."""
        from .isolate import exit_code

        return exit_code(self.left)


def error_of(exc: BaseException) -> dict:
    """The report's ``error`` of what left the script."""
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    if isinstance(exc, SystemExit):
        return {
            "type": "SystemExit",
            "message": f"the script exited with status {exc.code}",
            "traceback": tb,
        }
    return {"type": type(exc).__name__, "message": str(exc), "traceback": tb}


def run(script: str, args: list, tracker: StepTracker) -> Outcome:
    """Runs ``script`` with ``args`` as ``python script.py args`` would, steps delimited by
    ``tracker`` (started here unless the caller's collector started it)."""
    script = os.path.abspath(script)
    if not os.path.isfile(script):
        raise FileNotFoundError(f"no such script: {script}")
    folder = os.path.dirname(script)
    callsite.add_user_root(folder)
    saved_argv = sys.argv
    sys.argv = [script, *args]
    sys.path.insert(0, folder)
    out = Outcome()

    def backward(self, *a, **k):  # the step's loss (see the module doc)
        tracker.saw_backward(self)
        result = real_backward(self, *a, **k)
        tracker.after_backward(self)  # by-hand updates are found from here (steps.py)
        return result

    started_here = not tracker.started
    try:
        with patches.scoped(torch.Tensor, "backward", backward, reason=LOSS_WATCH) as real_backward:
            if started_here:
                tracker.start()
            try:
                runpy.run_path(script, run_name="__main__")
            except StepLimitReached:
                out.stopped_at_step = tracker.steps
            except SystemExit as e:
                out.left = e
                if e.code not in (None, 0):
                    out.status, out.error = "error", error_of(e)
            except KeyboardInterrupt as e:
                out.left = e
                out.status, out.error = "interrupted", error_of(e)
            except Exception as e:  # the report is still written, with the traceback
                out.left = e
                out.status, out.error = "error", error_of(e)
            finally:
                if started_here:
                    tracker.stop()
    finally:
        sys.argv = saved_argv
        if sys.path and sys.path[0] == folder:
            sys.path.pop(0)
    return out


def rank_and_world() -> tuple:
    """(rank, world size) of a torchrun launch (from its environment), else (0, 1)."""
    from torch_neuronx.runtime import env

    return env.integer("RANK", 0, 0), env.integer("WORLD_SIZE", 1, 1)
