"""Environment variables and compile options read by the ``neuron`` torch.compile backend.

Every variable is read when a graph is compiled (not at import), so tests and users can
change them between compilations.
"""
from __future__ import annotations

import os

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")


def env_flag(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    value = value.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"{name}={os.environ[name]!r} is not a boolean (use 1/0, true/false, yes/no)")


def disable_fallback_execution() -> bool:
    """TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION (default 1): a graph with a non-native op
    fails to compile instead of running eagerly."""
    return env_flag("TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION", True)


def cpu_autocopy_disabled() -> bool:
    """TORCH_NEURONX_DYNAMO_DISABLE_CPU_AUTOCOPY (default 0)."""
    return env_flag("TORCH_NEURONX_DYNAMO_DISABLE_CPU_AUTOCOPY", False)


def cache_disabled() -> bool:
    """TORCH_NEURONX_NEFF_DISABLE_CACHE (default 0); the snapshot spelling
    TORCH_NEURONX_DISABLE_NEFF_CACHE is honoured too."""
    return env_flag("TORCH_NEURONX_NEFF_DISABLE_CACHE", False) or env_flag(
        "TORCH_NEURONX_DISABLE_NEFF_CACHE", False
    )


def cache_dir() -> str:
    """TORCH_NEURONX_NEFF_CACHE_DIR (default /tmp/neff_cache)."""
    return os.path.abspath(os.environ.get("TORCH_NEURONX_NEFF_CACHE_DIR") or "/tmp/neff_cache")


def preserve_artifacts() -> bool:
    """TORCH_NEURONX_PRESERVE_COMPILATION_ARTIFACTS (default 0)."""
    return env_flag("TORCH_NEURONX_PRESERVE_COMPILATION_ARTIFACTS", False)


def debug_dir() -> str:
    """TORCH_NEURONX_DEBUG_DIR (default /tmp/neuron_backend)."""
    return os.path.abspath(os.environ.get("TORCH_NEURONX_DEBUG_DIR") or "/tmp/neuron_backend")


def shape_warning_threshold() -> int:
    """After this many graphs for one compiled function (one per distinct input shape) the
    backend warns once and suggests padding or bucketing
    (TORCH_NEURONX_DYNAMO_SHAPE_WARNING_THRESHOLD, default 4)."""
    return int(os.environ.get("TORCH_NEURONX_DYNAMO_SHAPE_WARNING_THRESHOLD", "4"))

#: ``options=`` keys the backend understands
KNOWN_OPTIONS = ("fallback_execution", "model_name")
