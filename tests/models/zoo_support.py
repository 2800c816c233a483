"""Helpers of the model-zoo rule tests: the skip without transformers, and a shrunk HF config."""

from __future__ import annotations

import importlib.util

import pytest

from torch_neuronx.testing.model_zoo import zoo

needs_transformers = pytest.mark.skipif(
    importlib.util.find_spec("transformers") is None,
    reason="transformers is not installed (the `test` extra installs it)",
)


def shrunk(model_type: str):
    """The sweep's shrunk config of HF `model_type` (its default config, shrunk)."""
    zoo.torchvision_shim.install()
    from transformers import AutoConfig

    from torch_neuronx.testing.model_zoo import hf_shrink

    return hf_shrink.shrink_config(AutoConfig.for_model(model_type))
