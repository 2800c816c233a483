"""One evaluation: the collector, the report it becomes, and the files it is written to."""

from __future__ import annotations

import json
import os
import time
import traceback

from . import build, findings, verdict
from .collector import Collector

_current: list = []  # the active evaluations (innermost last), for torch_neuronx.evaluate.step()


class Evaluation:
    def __init__(
        self,
        mode: str,
        profiles: list,
        *,
        steps: int | None = None,
        work: dict | None = None,
        tolerances: dict | None = None,
        progress=None,
        argv=None,
    ):
        self.mode = mode
        self.profiles = profiles
        self.work = work or {}
        self.tolerances = tolerances or {"loss": 1e-4, "grad_norm": 1e-3, "output": 1e-3}
        self.argv = argv or []
        self.progress = progress
        self.collector = Collector(profiles, steps_limit=steps, on_step=self._on_step)
        self.collector.wall_start = time.time()
        self.status = "ok"
        self.error = None
        self.explicit_steps = False

    def _on_step(self, n, limit):
        if self.progress is not None:
            self.progress(n, limit)

    def __enter__(self):
        self.collector.start()
        _current.append(self)
        return self

    def __exit__(self, *exc):
        if self in _current:
            _current.remove(self)
        self.collector.stop()
        return False

    def fail(self, exc: BaseException, status: str = "error") -> None:
        self.status = status
        self.error = {
            "type": type(exc).__name__,
            "message": str(exc),
            "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
        }

    def report(
        self,
        *,
        runs: dict | None = None,
        static: dict | None = None,
        extra: dict | None = None,
        rank: int = 0,
        world_size: int = 1,
        numerics_note: str | None = None,
    ) -> dict:
        c = self.collector
        if static is None and c.optimizers:
            from .fake import static_bytes

            params = [p for o in c.optimizers for g in o.param_groups for p in g["params"]]
            static = static_bytes(params, c.optimizers)
        rep = build.header(self.mode, self.argv)
        rep.update(
            {
                "status": self.status,
                "error": self.error,
                "rank": rank,
                "world_size": world_size,
                "touched_neuron": c.touched_neuron,
                "steps_completed": sum(not s.partial for s in c.steps),
                "steps": [s.to_dict() for s in c.steps],
                "work": self.work,
            }
        )
        if not c.touched_neuron:
            rep["notice"] = (
                "the workload never touched the neuron device: no op ran on it. Move the model and its "
                "inputs to the device (model.to('neuron'), x.to('neuron')) and run again."
            )
        rep["compile_failures"] = findings.compile_failures(getattr(c, "wall_start", 0.0))
        if self.error and "site" not in self.error:
            self.error["site"] = findings.error_site(self.error.get("traceback", ""))
        rep["blocking"] = findings.blocking(rep, c)
        rep["placement"] = build.placement(c)
        rep["host_sync"] = build.host_sync(c, len(c.steps))
        rep["compilation"] = build.compilation(c, None)
        rep["numerics"] = build.numerics(c, runs, self.tolerances, numerics_note)
        rep["memory"] = build.memory(c, static, self.profiles)
        parameters = sum(
            p.numel() for o in c.optimizers for g in o.param_groups for p in g["params"]
        )
        rep["projection"] = build.projection(
            c, self.profiles, self.work, findings.withheld(rep), parameters or None
        )
        if extra:
            rep.update(extra)
        rep["readiness"] = build.readiness(rep)
        return rep


def current() -> Evaluation | None:
    return _current[-1] if _current else None


def step(loss=None) -> None:
    """Marks the end of one step of the evaluated workload (a no-op outside an evaluation).
    Once a script calls this, optimizer steps no longer delimit steps."""
    ev = current()
    if ev is None:
        return
    ev.explicit_steps = True
    ev.collector.explicit = True
    ev.collector.mark_step(loss)


def write(rep: dict, out_dir: str, stem: str = "report", html: bool = True) -> dict:
    """Writes ``stem.json`` (and ``stem.html``) into ``out_dir``; returns their paths."""
    os.makedirs(out_dir, exist_ok=True)
    rep["verdict"] = verdict.build(rep)  # last: it reads the finished readiness and gates
    paths = {"json": os.path.join(out_dir, f"{stem}.json")}
    with open(paths["json"], "w") as f:
        json.dump(rep, f, indent=1, default=_jsonable)
    if html:
        from .render_html import render

        paths["html"] = os.path.join(out_dir, f"{stem}.html")
        with open(paths["html"], "w") as f:
            f.write(render(rep))
    return paths


def _jsonable(x):
    if isinstance(x, (set, frozenset, tuple)):
        return list(x)
    return str(x)
