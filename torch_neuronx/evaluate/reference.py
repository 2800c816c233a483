"""``--reference DEVICE``: the same unmodified script re-run on the reference device, step by
step, for the report's numerics.

After the instrumented run, ``torch-neuronx evaluate`` starts a child process
(``python -m torch_neuronx.evaluate.reference``) that runs the script again with:

- the ``neuron`` device **mapped** to the reference device (CPU, or CUDA where present): a
  ``TorchFunctionMode`` rewrites every device argument naming ``neuron`` (``device="neuron"``,
  a ``torch.device("neuron", 0)`` object, ``.to("neuron")``, ``Tensor.neuron()``, ``Module.to``
  through its tensors' ``.to``) and gives factory functions under ``with torch.device("neuron")``
  / ``set_default_device`` the reference device (that context sits at the bottom of the mode
  stack, below this mode); device objects themselves stay ``neuron``, so the script's
  ``torch.neuron`` calls keep working;
- ``torch.compile`` returning its function unchanged: the reference is eager PyTorch, what the
  user runs today;
- the same step boundaries: the optimizers whose steps counted in the instrumented run,
  identified by the order in which optimizers first stepped (a CPU twin the script keeps for
  its own checks stays out, as it did there), or the script's own
  ``torch_neuronx.evaluate.step()`` calls; the same ``--steps`` limit;
- per step: the loss (the scalar the script last called ``backward()`` on, or the one passed
  to ``step()``) and the gradient norm over those optimizers' parameters, read exactly as the
  instrumented run reads them;
- the neuron device's random stream kept apart (:class:`NeuronStream`): numbers the script
  draws for tensors that would have lived on neuron come from the neuron generator's state,
  the host's from the CPU generator, as in the instrumented run.

When the instrumented run compiled graphs, a second child runs the script on ``neuron`` with
``torch.compile`` returning its function unchanged: the *neuron eager* run, so the report also
compares eager with compiled. The script must be deterministic for the comparison to mean
anything (seeded). Not supported: several processes (``torchrun``: the report says so), and
objects that are not torch function arguments, such as ``torch.Generator("neuron")`` or
``torch.autocast("neuron")`` (under the mapping they stay on neuron / do not apply to the
reference device: an autocast region is a deviation by policy the report lists)."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import runpy
import subprocess
import sys
import time

import torch

from torch_neuronx.runtime import patches

from .device_map import MapDevice, NeuronStream  # noqa: F401 (re-exported)


class _StepRecorder:
    """The child's steps: loss and gradient norm per step, as the instrumented run reads them."""

    def __init__(self, ordinals: list, explicit: bool, steps: int | None):
        self.ordinals = set(ordinals)
        self.explicit = explicit
        self.steps_limit = steps
        self.order: list = []  # every optimizer, by its first step
        self.loss: list = []
        self.grad_norm: list = []
        self.wall_s: list = []
        self.pending_loss = None
        self._pre_step_sq: dict = {}  # id(optimizer) -> squared grad norm before its step
        self._t = time.perf_counter()

    # torch_neuronx.evaluate.step() looks for an evaluation with a collector (session.current)
    @property
    def collector(self):
        return self

    def before_optimizer_step(self, optimizer, args, kwargs) -> None:
        """The gradient norm before the step, as the instrumented run reads it (collector.py:
        an optimizer may change p.grad in place during its step)."""
        from .collector import grad_sq

        if not any(o is optimizer for o in self.order):
            self.order.append(optimizer)
        if any(o is optimizer for o in self._counted()):
            self._pre_step_sq[id(optimizer)] = grad_sq(optimizer)

    def after_optimizer_step(self, optimizer, args, kwargs) -> None:
        if not any(o is optimizer for o in self.order):
            self.order.append(optimizer)
        if self.explicit:
            return
        if next(i for i, o in enumerate(self.order) if o is optimizer) in self.ordinals:
            self.mark_step()

    def _counted(self) -> list:
        return [o for i, o in enumerate(self.order) if i in self.ordinals]

    def mark_step(self, loss=None) -> None:
        from .collector import StepLimitReached

        loss = self.pending_loss if loss is None else loss
        self.pending_loss = None
        self.loss.append(
            None
            if loss is None
            else float(loss.detach().float().cpu())
            if isinstance(loss, torch.Tensor)
            else float(loss)
        )
        from .collector import grad_sq

        sq = [
            self._pre_step_sq.pop(id(o)) if id(o) in self._pre_step_sq else grad_sq(o)
            for o in self._counted()
        ]
        self._pre_step_sq.clear()
        sq = [x for x in sq if x is not None]
        self.grad_norm.append(float(sum(sq) ** 0.5) if sq else None)
        now = time.perf_counter()
        self.wall_s.append(now - self._t)
        self._t = now
        if self.steps_limit is not None and len(self.loss) >= self.steps_limit:
            raise StepLimitReached(len(self.loss))


def _passthrough_compile(model=None, **kwargs):
    return (lambda m: m) if model is None else model


def run_child(device: str | None, script: str, args: list, ordinals, explicit, steps) -> dict:
    """Runs ``script`` in this process with ``neuron`` mapped to ``device`` (None: kept) and
    ``torch.compile`` as a no-op; returns what the child reports."""
    from torch.optim.optimizer import (
        register_optimizer_step_post_hook,
        register_optimizer_step_pre_hook,
    )

    from . import session
    from .collector import StepLimitReached
    from .runner import LOSS_WATCH

    rec = _StepRecorder(ordinals, explicit, steps)
    out = {"device": device or "neuron", "status": "ok", "error": None}
    sys.argv = [script, *args]
    sys.path.insert(0, os.path.dirname(script))

    def backward(self, *a, **k):  # the step's loss, as in runner.py
        if self.numel() == 1:
            rec.pending_loss = self
        return real_backward(self, *a, **k)

    scope = contextlib.ExitStack()
    scope.enter_context(
        patches.scoped(
            torch,
            "compile",
            _passthrough_compile,
            reason="torch_neuronx.evaluate --reference: the reference runs eager (what the "
            "user runs today)",
        )
    )
    real_backward = scope.enter_context(
        patches.scoped(torch.Tensor, "backward", backward, reason=LOSS_WATCH)
    )
    pre_hook = register_optimizer_step_pre_hook(rec.before_optimizer_step)
    hook = register_optimizer_step_post_hook(rec.after_optimizer_step)
    session._current.append(rec)
    stream = NeuronStream() if device else None
    mode = MapDevice(device, stream) if device else None
    try:
        if mode is not None:
            stream.__enter__()
            mode.__enter__()
        try:
            runpy.run_path(script, run_name="__main__")
        except StepLimitReached:
            pass
        except SystemExit as e:
            if e.code not in (None, 0):
                out.update(status="error", error=f"the script exited with status {e.code}")
        except Exception as e:  # noqa: BLE001 - reported to the parent
            out.update(status="error", error=f"{type(e).__name__}: {e}")
    finally:
        if mode is not None:
            mode.__exit__(None, None, None)
            stream.__exit__(None, None, None)
        hook.remove()
        pre_hook.remove()
        scope.close()
    out.update(loss=rec.loss, grad_norm=rec.grad_norm, wall_s=rec.wall_s)
    # a self-check of the mapping: a reference run never allocates on the neuron device
    out["touched_neuron"] = any(
        torch.neuron.max_memory_allocated(d) > 0 for d in range(torch.neuron.device_count())
    )
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m torch_neuronx.evaluate.reference")
    p.add_argument("--device", help="map neuron to this device (omit: keep neuron, eager)")
    p.add_argument(
        "--ordinals", default="0", help="optimizers whose steps count (first-step order)"
    )
    p.add_argument("--explicit", action="store_true", help="steps are evaluate.step() calls")
    p.add_argument("--steps", type=int)
    p.add_argument("--out", required=True)
    p.add_argument("script")
    p.add_argument("args", nargs=argparse.REMAINDER)
    a = p.parse_args(argv)
    ordinals = [int(x) for x in a.ordinals.split(",") if x]
    from .isolate import prepare_imports

    prepare_imports()  # the re-run imports what the script imports (timm, transformers)
    res = run_child(a.device, a.script, a.args, ordinals, a.explicit, a.steps)
    with open(a.out, "w") as f:
        json.dump(res, f)
    return 0


# -- the parent's side -------------------------------------------------------------------------


def validate_device(device: str) -> str:
    """The reference device, or a clear error listing the valid choices."""
    valid = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    if device == "auto":
        return valid[-1]
    try:
        kind = torch.device(device).type
    except (RuntimeError, ValueError):
        kind = None
    if kind not in valid:
        raise ValueError(
            f"--reference {device!r} is not an available reference device; valid: "
            + ", ".join(valid + ["auto"])
        )
    return device


def _child(name, device, ev, script, args, steps, out_dir) -> dict:
    c = ev.collector
    ordinals = [i for i, o in enumerate(c.optimizer_order) if any(o is x for x in c.optimizers)]
    path = os.path.join(out_dir, f"reference-{name}.json")
    cmd = [sys.executable, "-m", "torch_neuronx.evaluate.reference", "--out", path]
    cmd += ["--ordinals", ",".join(map(str, ordinals))]
    if device:
        cmd += ["--device", device]
    if c.explicit:
        cmd.append("--explicit")
    if steps is not None:
        cmd += ["--steps", str(steps)]
    os.makedirs(out_dir, exist_ok=True)
    t0 = time.perf_counter()
    proc = subprocess.run(
        [*cmd, os.path.abspath(script), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    if proc.returncode != 0 or not os.path.exists(path):
        return {
            "device": device or "neuron",
            "status": "error",
            "error": f"the reference run failed (exit {proc.returncode}): {proc.stderr[-2000:]}",
        }
    with open(path) as f:
        res = json.load(f)
    res["process_wall_s"] = time.perf_counter() - t0
    return res


def runs_for(ev, device: str, script: str, args: list, steps, out_dir: str) -> tuple:
    """(runs, note): the instrumented run's per-step figures and the re-runs' (the reference
    on ``device``; neuron eager as well when the instrumented run compiled graphs)."""
    from torch_neuronx.compile import dynamo_metrics

    c = ev.collector
    whole = [s for s in c.steps if not s.partial]
    compiled = any(
        g.get("timestamp", 0) >= getattr(c, "wall_start", 0)
        for g in dynamo_metrics.get_dynamo_metrics()
    )
    this = "neuron_compiled" if compiled else "neuron_eager"
    runs = {
        this: {
            "device": "neuron",
            "compiled": compiled,
            "loss": [s.loss for s in whole],
            "grad_norm": [s.grad_norm for s in whole],
            "wall_s": [s.wall_s for s in whole],
            "instrumented": True,
        }
    }
    notes = []
    children = [("reference", device)] + ([("neuron_eager", None)] if compiled else [])
    for name, dev in children:
        res = _child(name, dev, ev, script, args, len(whole) or steps, out_dir)
        res["compiled"] = False
        if res.get("status") != "ok":
            notes.append(f"{name}: {res.get('error')}")
        if res.get("loss"):
            runs[name] = res
        if len(res.get("loss") or []) != len(whole):
            notes.append(
                f"{name} ran {len(res.get('loss') or [])} steps, the instrumented run {len(whole)}"
            )
    if not any(math.isfinite(x) for x in (runs[this]["loss"] or []) if x is not None):
        notes.append("the instrumented run recorded no loss (no backward() on a scalar)")
    return runs, "; ".join(notes) or None


if __name__ == "__main__":
    sys.exit(main())
