"""Every replacement of a torch attribute made by torch_neuronx, performed and listed here.

A backend that swaps PyTorch's own functions changes programs that never touch its device, so
each swap is made through :func:`replace`, which records what was replaced and why, and
:func:`installed` lists them all::

    python -c "import torch; from torch_neuronx.runtime import patches; print(*patches.installed(), sep='\\n')"

The driver makes one replacement in C++ when it loads, listed here as well (NATIVE): PyTorch's
CPU allocator. Everything a wrapper adds on a CPU-only program is measured by
benchmarks/bench_cpu_only.py (BENCHMARKS.md).

A replacement that holds only for a region (the migration report's instrumentation,
``torch_neuronx.evaluate``) is a :class:`scoped` patch: listed by :func:`installed` while it is
active, and undone on exit, even through an exception, by restoring exactly the object it
replaced (scopes of the same attribute nest).
"""

from __future__ import annotations

import dataclasses
import threading
import types
from typing import Any

__all__ = ["Patch", "NATIVE", "replace", "original", "installed", "scoped"]


@dataclasses.dataclass(frozen=True)
class Patch:
    """One replaced attribute: ``target`` is its full name (``torch.compile``,
    ``torch.nn.modules.module.Module._apply``), ``reason`` why torch_neuronx replaces it."""

    target: str
    reason: str
    scoped: bool = False  # a :class:`scoped` patch: in effect only while its region runs

    def __str__(self) -> str:
        return f"{self.target}{' (scoped)' if self.scoped else ''}: {self.reason}"


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
_scopes: dict[str, list] = {}  # target -> the active scoped patches of it, innermost last
_MISSING = object()  # the attribute was not the owner's own (inherited or absent)


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
    """Every replacement in effect: the driver's (NATIVE), then Python's in install order,
    then the active :class:`scoped` patches (outermost first)."""
    with _lock:
        active = [p.patch for scopes in _scopes.values() for p in scopes]
        return [*NATIVE, *_patches.values(), *active]


class scoped:
    """``with scoped(owner, attr, new_value, reason=...) as previous:`` sets
    ``owner.attr = new_value`` for the region and lists it in :func:`installed`; ``previous`` is
    the value in effect before (the one a wrapper calls). On exit, normal or through an
    exception, the previous object is put back exactly (an attribute the owner did not hold
    itself, e.g. one inherited from a base class, is deleted again). Scopes of one attribute
    nest; one that ends before a scope opened inside it hands its saved value on to that one,
    so the last to end still restores the original. Not re-entrant: one object, one region."""

    __slots__ = ("owner", "attr", "new_value", "patch", "_saved", "_active")

    def __init__(self, owner, attr: str, new_value, *, reason: str) -> None:
        if not reason:
            raise ValueError(f"patches.scoped({_owner_name(owner)}.{attr}): give the reason")
        self.owner, self.attr, self.new_value = owner, attr, new_value
        self.patch = Patch(f"{_owner_name(owner)}.{attr}", reason, scoped=True)
        self._saved = _MISSING
        self._active = False

    def __enter__(self):
        with _lock:
            if self._active:
                raise RuntimeError(f"patches.scoped({self.patch.target}) is already active")
            own = getattr(self.owner, "__dict__", {})
            self._saved = own[self.attr] if self.attr in own else _MISSING
            previous = getattr(self.owner, self.attr, None)
            setattr(self.owner, self.attr, self.new_value)
            _scopes.setdefault(self.patch.target, []).append(self)
            self._active = True
            return previous

    def __exit__(self, *exc) -> None:
        with _lock:
            if not self._active:
                return
            self._active = False
            stack = _scopes[self.patch.target]
            at = next(i for i, p in enumerate(stack) if p is self)
            del stack[at]
            if at < len(stack):  # a scope opened inside this one is still active: it restores
                stack[at]._saved = self._saved
            elif self._saved is _MISSING:
                if self.attr in getattr(self.owner, "__dict__", {}):
                    delattr(self.owner, self.attr)
            else:
                setattr(self.owner, self.attr, self._saved)
            if not stack:
                del _scopes[self.patch.target]
