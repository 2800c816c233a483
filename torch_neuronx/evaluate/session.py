"""One evaluation: the collector, the report it becomes (report.py), and the files it is
written to."""

from __future__ import annotations

import json
import os
import time

from . import report as _report
from .collector import Collector
from .steps import step  # noqa: F401 (torch_neuronx.evaluate.step)


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

    def _on_step(self, n, limit):
        if self.progress is not None:
            self.progress(n, limit)

    @property
    def tracker(self):
        return self.collector.tracker

    def __enter__(self):
        self.collector.start()
        return self

    def __exit__(self, *exc):
        self.collector.stop()
        return False

    def fail(self, exc: BaseException, status: str = "error") -> None:
        from .runner import error_of

        self.status, self.error = status, error_of(exc)

    def ran(self, outcome) -> None:
        """Takes the runner's outcome (runner.Outcome) of the script."""
        self.status, self.error = outcome.status, outcome.error

    def report(self, **kw) -> dict:
        """The sections of this run (report.measured; report.finish completes them)."""
        return _report.measured(self, **kw)


def write(rep: dict, out_dir: str, stem: str = "report", html: bool = True) -> dict:
    """Writes ``stem.json`` (and ``stem.html``) into ``out_dir``; returns their paths."""
    os.makedirs(out_dir, exist_ok=True)
    if "verdict" not in rep:
        raise ValueError("report.finish(rep) completes a report before it is written")
    paths = {"json": os.path.join(out_dir, f"{stem}.json")}
    with open(paths["json"], "w") as f:
        json.dump(rep, f, indent=1, default=_report.jsonable)
    if html:
        from .render_html import render

        paths["html"] = os.path.join(out_dir, f"{stem}.html")
        with open(paths["html"], "w") as f:
            f.write(render(rep))
    return paths
