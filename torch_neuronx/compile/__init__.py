"""``torch.compile(backend="neuron")``: Dynamo -> AOTAutograd -> legality -> Inductor CPU
code generation running directly on the (host-RAM) memory of the emulated NeuronCore.

See docs/compile.md. Dynamo finds ``neuron_backend`` through the package's
``torch_dynamo_backends`` entry point. Importing this package imports neither Dynamo nor
Inductor (the autoloaded package installs ``inputs`` from here): the backend module is
loaded when Dynamo first asks for it, or on first access of ``neuron_backend`` / ``register``.
"""

from __future__ import annotations

from .dynamo_metrics import get_dynamo_metrics, get_graph_counts, reset_dynamo_metrics
from .legality import NeuronCompileError, NonNativeOpsError

__all__ = [
    "neuron_backend",
    "NeuronCompileError",
    "NonNativeOpsError",
    "get_dynamo_metrics",
    "get_graph_counts",
    "reset_dynamo_metrics",
    "register",
]


def __getattr__(name):
    if name == "neuron_backend":
        from .backend import neuron_backend

        return neuron_backend
    raise AttributeError(f"module 'torch_neuronx.compile' has no attribute '{name}'")


def register() -> None:
    """Register ``neuron`` with Dynamo by name (idempotent). Not needed when the package's
    ``torch_dynamo_backends`` entry point is installed."""
    from torch._dynamo.backends import registry

    from .backend import neuron_backend

    registry._lazy_import()
    if "neuron" in registry._COMPILER_FNS:
        return  # registered already (by this function or from the entry point)
    registry._BACKENDS.pop("neuron", None)
    registry.register_backend(neuron_backend, name="neuron")
