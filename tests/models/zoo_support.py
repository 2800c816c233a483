"""Helpers of the model-zoo rule tests: the skip without transformers, a shrunk HF config, a
built HF model with its synthetic batch, and a forward of it."""

from __future__ import annotations

import importlib.util

import pytest
import torch

from torch_neuronx.testing.model_zoo import train_check, zoo

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


def batch(model_type: str):
    """The sweep's model, config and synthetic batch of HF `model_type`."""
    from torch_neuronx.testing.model_zoo import hf_models

    zoo.torchvision_shim.install()
    model, config = hf_models.build(model_type)
    return model, config, hf_models.inputs(model, config)


def runs(model, inputs) -> None:
    """A forward of `model` on `inputs` (as the sweep calls it) gives floating outputs."""
    with torch.no_grad():
        out = model(**inputs, **train_check._forward_kwargs(model))
    assert train_check._floating_leaves(out)
