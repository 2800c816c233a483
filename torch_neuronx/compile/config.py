"""Environment variables and compile options read by the ``neuron`` torch.compile backend.

Every variable is read (through torch_neuronx.runtime.env) when a graph is compiled, not at
import, so tests and users can change them between compilations. The CPU-autocopy switch is
read by inputs.py, which owns that behaviour.
"""

from __future__ import annotations

import os

from torch_neuronx.runtime import env


def disable_fallback_execution() -> bool:
    """TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION (default 1): a graph with a non-native op
    fails to compile instead of running eagerly."""
    return env.flag("TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION", True)


def cache_disabled() -> bool:
    """TORCH_NEURONX_NEFF_DISABLE_CACHE (default 0); the snapshot spelling
    TORCH_NEURONX_DISABLE_NEFF_CACHE is honoured too."""
    return env.flag("TORCH_NEURONX_NEFF_DISABLE_CACHE", False) or env.flag(
        "TORCH_NEURONX_DISABLE_NEFF_CACHE", False
    )


def cache_dir() -> str:
    """TORCH_NEURONX_NEFF_CACHE_DIR (default per user, ``<tempdir>/torchneuronx_<user>/
    neff_cache``; TorchNeuron's shared ``/tmp/neff_cache`` is not used: the cache holds code
    this process loads, see cache_dir.py and docs/decisions.md)."""
    from .cache_dir import default_root

    return os.path.abspath(env.text("TORCH_NEURONX_NEFF_CACHE_DIR") or default_root())


def preserve_artifacts() -> bool:
    """TORCH_NEURONX_PRESERVE_COMPILATION_ARTIFACTS (default 0)."""
    return env.flag("TORCH_NEURONX_PRESERVE_COMPILATION_ARTIFACTS", False)


def debug_dir() -> str:
    """TORCH_NEURONX_DEBUG_DIR (default /tmp/neuron_backend)."""
    return os.path.abspath(env.text("TORCH_NEURONX_DEBUG_DIR", "/tmp/neuron_backend"))


def shape_warning_threshold() -> int:
    """After this many graphs for one compiled function (one per distinct input shape) the
    backend warns once and suggests padding or bucketing
    (TORCH_NEURONX_DYNAMO_SHAPE_WARNING_THRESHOLD, default 4)."""
    return env.integer("TORCH_NEURONX_DYNAMO_SHAPE_WARNING_THRESHOLD", 4)


#: ``options=`` keys the backend understands
KNOWN_OPTIONS = ("fallback_execution", "model_name")
