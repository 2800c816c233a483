"""Helpers of the evaluate tests: run ``torch-neuronx evaluate`` on a script in scripts/ (each
once per session, in a fresh process, as a user would) and read the report it wrote."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from torch_neuronx.testing.child import child_env

SCRIPTS = Path(__file__).parent / "scripts"
_cache: dict = {}


def marker_line(script: str, marker: str) -> int:
    for i, line in enumerate((SCRIPTS / script).read_text().splitlines(), 1):
        if f"MARK-{marker}" in line:
            return i
    raise AssertionError(f"no MARK-{marker} in {script}")


class Run:
    def __init__(self, proc, out: Path):
        self.rc = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.out = out

    @property
    def report(self) -> dict:
        with open(self.out / "report.json") as f:
            return json.load(f)

    def explain(self) -> str:
        return f"rc={self.rc}\nstdout:\n{self.stdout[-3000:]}\nstderr:\n{self.stderr[-5000:]}"


def evaluate(
    tmp_root: Path,
    key: str,
    *cli_args: str,
    env: dict | None = None,
    launcher=None,
    timeout: int = 240,
    cwd: Path | None = None,
) -> Run:
    """``torch-neuronx evaluate --out DIR --quiet CLI_ARGS`` once per key, run in ``cwd``
    (scripts/ unless given: a script that reads files relative to where it is run)."""
    if key in _cache:
        return _cache[key]
    out = tmp_root / key
    cmd = launcher or [sys.executable, "-m", "torch_neuronx.tools.cli"]
    e = child_env(env)
    e.setdefault("TORCH_NEURONX_NEFF_CACHE_DIR", str(tmp_root / "neff_cache"))
    e["OMP_NUM_THREADS"] = "1"
    proc = subprocess.run(
        [*cmd, "evaluate", "--out", str(out), "--quiet", *cli_args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=e,
        cwd=str(cwd or SCRIPTS),
        preexec_fn=foreground_sigint,
    )
    _cache[key] = Run(proc, out)
    return _cache[key]


def foreground_sigint() -> None:
    """`preexec_fn` of a test's evaluate process: SIGINT at its default, as in a terminal.
    A pytest started in the background (`cmd &`, nohup, some CI runners) has SIGINT ignored,
    every child inherits that and Python then installs no KeyboardInterrupt handler, so the
    Ctrl-C tests would test nothing but the launcher's shell."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def line_of(path: Path, text: str, nth: int = 1) -> int:
    """The line number of the ``nth`` line of ``path`` that contains ``text`` (for verbatim
    copies of public scripts, which carry no MARK comments)."""
    hits = [i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line]
    assert len(hits) >= nth, f"{text!r} occurs {len(hits)} times in {path}"
    return hits[nth - 1]


def have(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None
