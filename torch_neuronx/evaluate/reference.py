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
import subprocess
import sys
import time

import torch

from torch_neuronx.runtime import patches

from .device_map import MapDevice, NeuronStream  # noqa: F401 (re-exported)


def _passthrough_compile(model=None, **kwargs):
    return (lambda m: m) if model is None else model


def run_child(
    device: str | None, script: str, args: list, ordinals, explicit, steps, manual=False
) -> dict:
    """Runs ``script`` in this process with ``neuron`` mapped to ``device`` (None: kept) and
    ``torch.compile`` as a no-op; returns what the child reports. Steps, loss and gradient
    norm come from the one step tracker (steps.py), counting the optimizers the instrumented
    run counted (their first-step ordinals), or its by-hand parameter updates (``manual``),
    through the one runner (runner.py)."""
    from . import runner
    from .steps import StepTracker

    tracker = StepTracker(
        count=set(ordinals), explicit=explicit, steps_limit=steps, manual=bool(manual)
    )
    out = {"device": device or "neuron", "status": "ok", "error": None}
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
    if device:
        stream = NeuronStream()
        scope.enter_context(stream)
        scope.enter_context(MapDevice(device, stream))
    with scope:
        outcome = runner.run(script, args, tracker)
    if outcome.status != "ok":
        out.update(status="error", error=f"{outcome.error['type']}: {outcome.error['message']}")
        if outcome.error["type"] == "SystemExit":
            out["error"] = outcome.error["message"]
    out.update(loss=tracker.loss, grad_norm=tracker.grad_norm, wall_s=tracker.wall_s)
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
    p.add_argument(
        "--manual", action="store_true", help="steps are by-hand parameter updates (steps.py)"
    )
    p.add_argument("--steps", type=int)
    p.add_argument("--out", required=True)
    p.add_argument("script")
    p.add_argument("args", nargs=argparse.REMAINDER)
    a = p.parse_args(argv)
    ordinals = [int(x) for x in a.ordinals.split(",") if x]
    from .isolate import prepare_imports

    prepare_imports()  # the re-run imports what the script imports (timm, transformers)
    res = run_child(a.device, a.script, a.args, ordinals, a.explicit, a.steps, a.manual)
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
    ordinals = c.tracker.counted_ordinals()
    path = os.path.join(out_dir, f"reference-{name}.json")
    cmd = [sys.executable, "-m", "torch_neuronx.evaluate.reference", "--out", path]
    cmd += ["--ordinals", ",".join(map(str, ordinals))]
    if device:
        cmd += ["--device", device]
    if c.explicit:
        cmd.append("--explicit")
    if c.tracker.manual:
        cmd.append("--manual")
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
