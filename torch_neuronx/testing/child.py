"""Run test code in a fresh Python interpreter.

Behaviour fixed at the first import or initialisation (environment variables, autoload,
the runtime's first start, fork safety) can only be tested in a new process. The code run
there asserts its own expectations: a failed ``assert`` exits with its traceback, which
:func:`run_ok` puts into the parent's failure message. (Printing values for the parent to
compare would hide *which* check failed and why.)

The child starts from this process's environment, minus the variables that choose the
emulated topology (so it sees the default ``trn2.3xlarge`` unless ``env`` says otherwise),
plus ``env``. It imports the installed ``torch_neuronx`` (the backend autoloads with
``import torch``).
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap

__all__ = ["child_env", "run", "run_ok", "start"]

# Variables that select the emulated topology; tests that want one pass it in ``env``.
_TOPOLOGY_VARS = (
    "TORCH_NEURONX_EMULATED_INSTANCE",
    "NEURON_LOGICAL_NC_CONFIG",
    "NEURON_RT_VISIBLE_CORES",
    "NEURON_RT_NUM_CORES",
    "TORCH_NEURONX_HBM_PER_CORE",
    "TORCH_NEURONX_STRICT",
)

_script_dir: str | None = None


def child_env(env: dict | None = None) -> dict:
    """This process's environment without the topology variables, plus ``env``."""
    full = {k: v for k, v in os.environ.items() if k not in _TOPOLOGY_VARS}
    full.update(env or {})
    return full


def _script(code: str) -> str:
    """``code`` written to a file (not ``-c``: multiprocessing's spawn re-imports
    ``__main__`` from its file). Files live in one directory removed at exit."""
    global _script_dir
    if _script_dir is None:
        _script_dir = tempfile.mkdtemp(prefix="torch_neuronx_child_")
        atexit.register(shutil.rmtree, _script_dir, True)
    fd, path = tempfile.mkstemp(suffix=".py", dir=_script_dir)
    with os.fdopen(fd, "w") as f:
        f.write(textwrap.dedent(code))
    return path


def start(code: str, env: dict | None = None, argv: tuple | list = ()) -> subprocess.Popen:
    """Start ``code`` with arguments ``argv``; stdout and stderr are captured as text."""
    return subprocess.Popen(
        [sys.executable, _script(code), *argv],
        env=child_env(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def run(code: str, env: dict | None = None, timeout: float = 180) -> subprocess.CompletedProcess:
    """Run ``code`` to completion; for tests that expect the child to fail."""
    return subprocess.run(
        [sys.executable, _script(code)],
        env=child_env(env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_ok(code: str, env: dict | None = None, timeout: float = 180) -> str:
    """Run ``code``, which asserts its own expectations; fails with the child's traceback
    unless it exits with status 0. Returns its stdout."""
    r = run(code, env, timeout)
    if r.returncode != 0:
        raise AssertionError(
            f"child process exited with status {r.returncode}\n"
            f"--- stdout ---\n{r.stdout[-4000:]}\n--- stderr ---\n{r.stderr[-8000:]}"
        )
    return r.stdout
