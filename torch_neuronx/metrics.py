"""Counters of the backend (TorchNeuron's torch_neuronx.metrics).

C++ counters (kernel plan cache: CompilationCache.InMemoryHits / InMemoryMisses /
CompileTimeNs / Entries / Evictions; Runtime.HostReadSyncs) and Python-side counters
(bumped by the compile and distributed layers) share one namespace.
"""

from __future__ import annotations

from torch_neuronx import _C

__all__ = [
    "clear_all",
    "clear_counters",
    "get_counter_names",
    "get_counter_value",
    "increment",
    "report",
]


def increment(name: str, by: int = 1) -> None:
    _C._bump_counter(name, int(by))


def _all() -> dict[str, int]:
    return dict(_C._counters())


def get_counter_names() -> list[str]:
    return sorted(_all())


def get_counter_value(name: str) -> int | None:
    return _all().get(name)


def clear_counters() -> None:
    _C._clear_counters()


def clear_all() -> None:
    clear_counters()


def report() -> str:
    return "\n".join(f"{k}: {v}" for k, v in sorted(_all().items()))
