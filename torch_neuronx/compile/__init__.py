"""``torch.compile(backend="neuron")``: Dynamo -> AOTAutograd -> legality -> Inductor CPU
code generation running directly on the (host-RAM) memory of the emulated NeuronCore.

See docs/compile.md. ``neuron_backend`` is registered through the ``torch_dynamo_backends``
entry point; importing this package also registers it by name for environments where the
entry point is not installed.
"""
from __future__ import annotations

from .backend import NeuronCompileError, neuron_backend
from .metrics import get_dynamo_metrics, get_graph_counts, reset_dynamo_metrics

__all__ = [
    "neuron_backend",
    "NeuronCompileError",
    "get_dynamo_metrics",
    "get_graph_counts",
    "reset_dynamo_metrics",
    "register",
]


def register() -> None:
    """Register ``neuron`` with Dynamo by name (idempotent). Not needed when the package's
    ``torch_dynamo_backends`` entry point is installed."""
    from torch._dynamo.backends import registry

    registry._lazy_import()
    if registry._COMPILER_FNS.get("neuron") is neuron_backend:
        return
    if "neuron" in registry._COMPILER_FNS:
        return  # already registered from the entry point (same function object)
    registry._BACKENDS.pop("neuron", None)
    registry.register_backend(neuron_backend, name="neuron")
