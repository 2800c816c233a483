"""Runs an unmodified script under an :class:`~.session.Evaluation` (``torch-neuronx evaluate``).

The script runs in the calling process (``runpy``, as ``python script.py`` would, with its own
``sys.argv``; the CLI calls this in a forked worker, isolate.py, so the script cannot end the
harness), so every hook sees it: the driver's per-op callback, the performance model's
events, PyTorch's global optimizer-step hooks (the step boundary) and Dynamo's logs. The loss
of a step is the tensor the script last called ``backward()`` on (read by the report, not
counted as the script's host sync).

Outcomes: the script finishes (status ``ok``); ``--steps N`` is reached (``ok``, stopped
there); it raises (``error``: the report holds what was collected and the traceback);
Ctrl-C (``interrupted``: a partial report). ``os._exit`` and signals: isolate.py."""

from __future__ import annotations

import os
import runpy
import sys

import torch

from torch_neuronx.runtime import patches

from . import callsite
from .collector import StepLimitReached
from .session import Evaluation

#: the reason of the scoped ``torch.Tensor.backward`` wrapper (here and in reference.py)
LOSS_WATCH = "torch_neuronx.evaluate: remembers the scalar each step calls backward() on (the loss)"


def run_script(ev: Evaluation, script: str, args: list) -> int:
    """Runs the script under ``ev``; returns the status ``python script.py`` would have ended
    with (isolate.exit_code: the status a child the script forked ends with)."""
    from .isolate import exit_code

    left = None  # what left the script (None: it ran to its end)
    script = os.path.abspath(script)
    if not os.path.isfile(script):
        raise FileNotFoundError(f"no such script: {script}")
    callsite.add_user_root(os.path.dirname(script))
    saved_argv, saved_path0 = sys.argv, sys.path[0] if sys.path else None
    sys.argv = [script, *args]
    sys.path.insert(0, os.path.dirname(script))
    coll = ev.collector

    def backward(self, *a, **k):  # remembers the loss of the step (see the module doc)
        if self.numel() == 1:
            coll.pending_loss = self
        return real_backward(self, *a, **k)

    try:
        with patches.scoped(torch.Tensor, "backward", backward, reason=LOSS_WATCH) as real_backward:
            with ev:
                try:
                    runpy.run_path(script, run_name="__main__")
                except StepLimitReached:
                    ev.stopped_at_step = len(coll.steps)
                except SystemExit as e:
                    left = e
                    if e.code not in (None, 0):
                        ev.fail(e)
                        ev.error["message"] = f"the script exited with status {e.code}"
                except KeyboardInterrupt as e:
                    left = e
                    ev.fail(e, status="interrupted")
                except Exception as e:  # the report is still written, with the traceback
                    left = e
                    ev.fail(e)
    finally:
        sys.argv = saved_argv
        if saved_path0 is not None and sys.path and sys.path[0] == os.path.dirname(script):
            sys.path.pop(0)
    return exit_code(left)


def rank_and_world() -> tuple:
    """(rank, world size) of a torchrun launch (from its environment), else (0, 1)."""
    from torch_neuronx.runtime import env

    return env.integer("RANK", 0, 0), env.integer("WORLD_SIZE", 1, 1)
