"""Blocking findings of a run, and when the report must withhold its per-step figures.

A run that raised, swallowed a compile failure, or trained nothing on the device is not
ready, whatever its placement and host-sync items say; and figures computed from such a run
(a step time, a projection, a cost per step) describe a run that is not the one that would
train on Trainium, so the report withholds them and says why (issue 25)."""

from __future__ import annotations

import re

from .callsite import is_user

_FRAME = re.compile(r'File "(.+?)", line (\d+), in (\S+)')


def error_site(tb: str) -> str | None:
    """``file:line in fn`` of the innermost user frame of a formatted traceback."""
    frames = [(f, int(n), fn) for f, n, fn in _FRAME.findall(tb or "")]
    user = [fr for fr in frames if is_user(fr[0])]
    if not user:
        return None
    f, n, fn = user[-1]
    return f"{f}:{n} in {fn}"


def _stack_site(stack: list) -> str | None:
    user = [fr for fr in stack or [] if is_user(fr[0])]
    if not user:
        return None
    f, n, fn = user[-1]
    return f"{f}:{n} in {fn}"


def compile_failures(since: float) -> list:
    """The neuron backend's compile failures recorded since ``since`` (time.time())."""
    from torch_neuronx.compile import dynamo_metrics

    out = []
    for r in dynamo_metrics.get_compile_failures():
        if r["timestamp"] < since:
            continue
        out.append(
            {
                "function": r["function"],
                "type": r["type"],
                "message": r["message"],
                "site": _stack_site(r["stack"]) or "?",
            }
        )
    return out


def blocking(rep: dict, c) -> list:
    """Blocking readiness items ({status: fail, item, site}) of an instrumented run."""
    items = []
    err = rep.get("error") or {}
    if rep.get("status") == "error" and "Traceback" in (err.get("traceback") or ""):
        site = error_site(err["traceback"])
        items.append(
            _fail(
                f"The script raised {err.get('type')}: {str(err.get('message'))[:200]}",
                site,
            )
        )
    for f in rep.get("compile_failures") or []:
        caught = " (the script caught the error and carried on)" if rep["status"] == "ok" else ""
        items.append(
            _fail(
                f"The neuron compiler failed on {f['function']}: {f['type']}: "
                f"{f['message'][:200]}{caught}",
                f["site"],
            )
        )
    if rep.get("touched_neuron") and not getattr(c, "optimizers", None):
        host = getattr(c, "host_optimizers", None) or []
        if host:
            site = c.optimizer_sites.get(host[0]) if hasattr(c, "optimizer_sites") else None
            items.append(
                _fail(
                    "The optimizer holds CPU tensors while the model runs on neuron: its steps "
                    "trained nothing on the device. Build it over the parameters of the model "
                    "on neuron (after model.to('neuron'))",
                    site,
                )
            )
        elif rep.get("steps_completed", 0) == 0 and rep.get("status") == "ok":
            items.append(
                _fail(
                    "No step was counted: no optimizer over neuron parameters stepped, no "
                    "parameter changed after a backward(), and the script never called "
                    "torch_neuronx.evaluate.step(); nothing was trained",
                    None,
                )
            )
    return items


def _fail(text: str, site: str | None) -> dict:
    return {"status": "fail", "item": text + (f" (at {site})" if site else ""), "site": site}


def withheld(rep: dict) -> str | None:
    """Why the per-step figures and projections are withheld (None: they stand)."""
    status = rep.get("status")
    if status != "ok":
        return (
            f"withheld: the run did not complete (status {status}); figures from a partial run "
            "do not describe a training step"
        )
    if rep.get("compile_failures"):
        return (
            "withheld: a graph failed to compile, so the run measured is not the one that would "
            "run on Trainium"
        )
    if not rep.get("steps_completed"):
        return "withheld: no step was counted, so there is no per-step figure to project"
    if rep.get("blocking"):
        return "withheld: " + rep["blocking"][0]["item"]
    return None
