"""Shared fixtures for the torch.compile(backend="neuron") tests.

Dynamo finds the backend through the installed package's ``torch_dynamo_backends`` entry
point, as in a user's program (test_registration checks that in a fresh process).
"""

from __future__ import annotations

import os

import pytest
import torch


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
    """The device the compiled programs run on."""
    return torch.device("neuron")
