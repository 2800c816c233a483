"""The zoo's model list: every model as ``suite:name``, and how to build it with its batch.

Suites: ``hf`` (Hugging Face transformers, `hf_models`) and ``timm`` (the smallest variant of
every timm architecture family, `timm_models`). Both libraries import torchvision (timm always,
transformers for its image processors), so `torchvision_shim.install()` runs first: without it
PyPI's CUDA torchvision cannot be imported beside the CPU torch (see that module).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from torch_neuronx.testing import torchvision_shim

SUITES = ("hf", "timm")

# Model libraries the sweep leaves out, with the reason (the report prints it). Empty today.
NOT_SWEPT: dict[str, str] = {}


def available(suite: str) -> str:
    """'' when `suite`'s library imports, else why not."""
    torchvision_shim.install()
    try:
        if suite == "hf":
            import transformers  # noqa: F401
        elif suite == "timm":
            import timm  # noqa: F401
        else:
            return f"unknown suite {suite!r}"
    except ImportError as exc:
        return f"{type(exc).__name__}: {exc}"
    return ""


def models(suite: str) -> list[str]:
    """Every model of `suite`, as ``suite:name``, sorted."""
    if suite == "hf":
        from torch_neuronx.testing.model_zoo import hf_models

        return [f"hf:{t}" for t in hf_models.model_types()]
    if suite == "timm":
        from torch_neuronx.testing.model_zoo import timm_models

        return [f"timm:{n}" for n in timm_models.model_names()]
    raise ValueError(f"unknown suite {suite!r}")


def builder(model: str) -> Callable[[], tuple[torch.nn.Module, dict[str, torch.Tensor]]]:
    """A function that builds `model` (``suite:name``) seeded on CPU, with its CPU batch."""
    suite, _, name = model.partition(":")
    torchvision_shim.install()
    if suite == "timm":
        from torch_neuronx.testing.model_zoo import timm_models

        return lambda: timm_models.build(name)
    if suite == "hf":
        from torch_neuronx.testing.model_zoo import hf_models

        def build():
            module, _, batch = hf_models.build_with_inputs(name)
            return module, batch

        return build
    raise ValueError(f"unknown suite {suite!r} in {model!r}")
