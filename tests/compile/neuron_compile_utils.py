"""Helpers for tests/compile (unique module name: pytest puts this folder on sys.path)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

DEVICE = os.environ.get("TORCH_NEURONX_COMPILE_TEST_DEVICE", "neuron")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

needs_neuron = pytest.mark.skipif(
    DEVICE != "neuron", reason="exercises neuron<->CPU placement; running with CPU stand-ins"
)


def _child_env(env: dict | None) -> dict:
    """This process's environment plus the repo on sys.path, the device under test and ``env``."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = REPO + os.pathsep + full_env.get("PYTHONPATH", "")
    full_env["TORCH_NEURONX_COMPILE_TEST_DEVICE"] = DEVICE
    if env:
        full_env.update(env)
    return full_env


def run_python(code: str, env: dict | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter (repo on sys.path); returns the completed process."""
    full_env = _child_env(env)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def start_python(code: str, env: dict | None = None, argv=()) -> subprocess.Popen:
    full_env = _child_env(env)
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *argv],
        env=full_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
