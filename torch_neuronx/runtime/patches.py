"""Every replacement of a torch attribute made by torch_neuronx, performed and listed here.

A backend that swaps PyTorch's own functions changes programs that never touch its device, so
each swap is made through :func:`replace`, which records what was replaced and why, and
:func:`installed` lists them all::

    python -c "import torch; from torch_neuronx.runtime import patches; print(*patches.installed(), sep='\\n')"

The driver makes one replacement in C++ when it loads, listed here as well (NATIVE): PyTorch's
CPU allocator. Everything a wrapper adds on a CPU-only program is measured by
benchmarks/bench_cpu_only.py (BENCHMARKS.md).
"""

from __future__ import annotations

import dataclasses
import threading
import types
from typing import Any

__all__ = ["Patch", "NATIVE", "replace", "original", "installed"]


@dataclasses.dataclass(frozen=True)
class Patch:
    """One replaced attribute: ``target`` is its full name (``torch.compile``,
    ``torch.nn.modules.module.Module._apply``), ``reason`` why torch_neuronx replaces it."""

    target: str
    reason: str

    def __str__(self) -> str:
        return f"{self.target}: {self.reason}"


#: replacements the C++ driver makes when it is loaded (before any Python patch)
NATIVE = (
    Patch(
        "c10::GetCPUAllocator() (c10::SetCPUAllocator, priority 10)",
        "route-aware CPU allocator: inside runtime.host.device_allocations (compiled graphs, "
        "collectives) the CPU kernels' outputs are allocated from the neuron device's memory "
        "pool; outside one it forwards every allocation to PyTorch's own CPU allocator",
    ),
)

_lock = threading.Lock()
_patches: dict[str, Patch] = {}
_originals: dict[str, Any] = {}


def _owner_name(owner) -> str:
    if isinstance(owner, types.ModuleType):
        return owner.__name__
    return f"{owner.__module__}.{owner.__qualname__}"


def replace(owner, attr: str, new_value, *, reason: str):
    """Set ``owner.attr = new_value`` and record it with ``reason``; returns the value that
    was there before torch_neuronx first replaced it (the one a wrapper calls).

    Replacing the same attribute again (an install step run twice) installs ``new_value``
    and keeps the first original, so wrappers never wrap each other."""
    if not reason:
        raise ValueError(f"patches.replace({_owner_name(owner)}.{attr}): give the reason")
    target = f"{_owner_name(owner)}.{attr}"
    with _lock:
        if target not in _originals:
            # None: the attribute was absent (an added hook, e.g. a class's __deepcopy__)
            _originals[target] = getattr(owner, attr, None)
        setattr(owner, attr, new_value)
        _patches[target] = Patch(target, reason)
        return _originals[target]


def original(owner, attr: str):
    """The value ``owner.attr`` had before torch_neuronx replaced it (KeyError if it did not)."""
    return _originals[f"{_owner_name(owner)}.{attr}"]


def installed() -> list[Patch]:
    """Every replacement in effect: the driver's (NATIVE), then Python's in install order."""
    with _lock:
        return [*NATIVE, *_patches.values()]
