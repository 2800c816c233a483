"""Shared fixtures for the torch.compile(backend="neuron") tests.

The tests target the ``neuron`` device. ``TORCH_NEURONX_COMPILE_TEST_DEVICE=cpu`` runs the
device-independent parts of the pipeline with CPU tensors standing in for neuron tensors
(used while the core device layer was being written); tests that only make sense with a
real neuron device are skipped then, with that reason.
"""
from __future__ import annotations

import os
import pytest
import torch

from neuron_compile_utils import DEVICE



@pytest.fixture(scope="session", autouse=True)
def _session_cache_dir(tmp_path_factory):
    """One persistent compile cache for the whole session (identical graphs compiled by
    several tests are generated once), isolated from the user's /tmp/neff_cache."""
    path = tmp_path_factory.mktemp("neff_cache")
    old = os.environ.get("TORCH_NEURONX_NEFF_CACHE_DIR")
    os.environ["TORCH_NEURONX_NEFF_CACHE_DIR"] = str(path)
    yield str(path)
    if old is None:
        os.environ.pop("TORCH_NEURONX_NEFF_CACHE_DIR", None)
    else:
        os.environ["TORCH_NEURONX_NEFF_CACHE_DIR"] = old


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    from torch_neuronx.compile import reset_dynamo_metrics

    torch._dynamo.reset()
    reset_dynamo_metrics()
    yield
    torch._dynamo.reset()


@pytest.fixture
def device():
    return torch.device(DEVICE)




def _ensure_registered():
    """In a checkout that is not pip-installed the entry point is missing; register by name
    so the in-process tests can still use backend="neuron" (test_registration checks the
    entry point itself, in a subprocess)."""
    from torch._dynamo.backends.registry import list_backends

    if "neuron" not in list_backends(exclude_tags=()):
        from torch_neuronx.compile import register

        register()


_ensure_registered()
