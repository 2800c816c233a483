"""Shared test helpers. The neuron backend autoloads with `import torch`."""
import os
import subprocess
import sys
import tempfile
import textwrap

import pytest
import torch

FULL = os.environ.get("TORCH_NEURONX_TEST_FULL", "0") == "1"


def run_py(code: str, env: dict | None = None, timeout: float = 180) -> subprocess.CompletedProcess:
    """Run `code` in a fresh interpreter (for environment-dependent behaviour)."""
    e = dict(os.environ)
    for k in ("TORCH_NEURONX_EMULATED_INSTANCE", "NEURON_LOGICAL_NC_CONFIG", "NEURON_RT_VISIBLE_CORES",
              "NEURON_RT_NUM_CORES", "TORCH_NEURONX_HBM_PER_CORE", "TORCH_NEURONX_STRICT"):
        e.pop(k, None)
    e.update(env or {})
    # A real file (not -c), so multiprocessing's spawn can re-import __main__.
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(textwrap.dedent(code))
    try:
        return subprocess.run([sys.executable, f.name], env=e, capture_output=True, text=True,
                              timeout=timeout)
    finally:
        os.unlink(f.name)


@pytest.fixture
def py():
    return run_py


def pytest_collection_modifyitems(config, items):
    if FULL:
        return
    skip = pytest.mark.skip(reason="slow sweep: runs under `make test-full` (TORCH_NEURONX_TEST_FULL=1)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
