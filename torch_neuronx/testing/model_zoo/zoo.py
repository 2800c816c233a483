"""The zoo's model list: every model as ``suite:name``, and how to build it with its batch.

Suites: ``hf`` (Hugging Face transformers, `hf_models`). timm is not a suite here:
`NOT_SWEPT` says why (it cannot be imported beside the CPU torch this project pins).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

SUITES = ("hf",)

# Model libraries the sweep leaves out, with the reason (the report prints it).
NOT_SWEPT = {
    "timm": "every timm release imports torchvision, and PyPI's only torchvision for torch "
    "2.13 (0.28.0, pinning torch==2.13.0) is a CUDA build whose extension links "
    "libtorch_cuda.so: `import torchvision` fails beside the CPU torch this project pins "
    '("operator torchvision::nms does not exist"), and a newer torchvision pulls another torch.',
}


def available(suite: str) -> str:
    """'' when `suite`'s library imports, else why not."""
    try:
        if suite == "hf":
            import transformers  # noqa: F401
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
    raise ValueError(f"unknown suite {suite!r}")


def builder(model: str) -> Callable[[], tuple[torch.nn.Module, dict[str, torch.Tensor]]]:
    """A function that builds `model` (``suite:name``) seeded on CPU, with its CPU batch."""
    suite, _, name = model.partition(":")
    if suite == "hf":
        from torch_neuronx.testing.model_zoo import hf_models

        def build():
            module, config = hf_models.build(name)
            return module, hf_models.inputs(module, config)

        return build
    raise ValueError(f"unknown suite {suite!r} in {model!r}")
