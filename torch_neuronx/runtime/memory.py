"""torch.neuron.memory: device memory statistics and control (torch.cuda.memory's names and
keys).

The statistics count what lives on the device: tensors, their storage and the allocator's
cache. Kernels run on the host, and what a kernel allocates while it runs (type-promoting
copies, sort scratch, matmul packing) is host workspace, never device memory: it has its own
keys, ``host_workspace.{allocated_bytes,reserved_bytes,allocation}.{current,peak,allocated,freed}``,
and never causes a device out-of-memory error. ``empty_cache()`` releases cached workspace too.
See docs/decisions.md ("Kernel workspace vs device memory")."""

from __future__ import annotations

import collections

from torch_neuronx import _C
from torch_neuronx.runtime.devices import _index, get_device_properties
from torch_neuronx.runtime.memory_snapshot import (  # noqa: F401  (torch.cuda.memory's names)
    _dump_snapshot,
    _record_memory_history,
    _snapshot,
    memory_snapshot,
)

__all__ = [
    "empty_cache",
    "max_memory_allocated",
    "max_memory_reserved",
    "mem_get_info",
    "memory_allocated",
    "memory_reserved",
    "memory_stats",
    "memory_stats_as_nested_dict",
    "memory_summary",
    "reset_accumulated_memory_stats",
    "reset_max_memory_allocated",
    "reset_max_memory_reserved",
    "reset_peak_memory_stats",
]


def memory_stats(device=None) -> collections.OrderedDict[str, int]:
    stats = _C._memory_stats(_index(device))
    return collections.OrderedDict(sorted(stats.items()))


def memory_stats_as_nested_dict(device=None) -> dict:
    out: dict = {}
    for key, value in memory_stats(device).items():
        node = out
        parts = key.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = value
    return out


def memory_allocated(device=None) -> int:
    return memory_stats(device)["allocated_bytes.all.current"]


def max_memory_allocated(device=None) -> int:
    return memory_stats(device)["allocated_bytes.all.peak"]


def memory_reserved(device=None) -> int:
    return memory_stats(device)["reserved_bytes.all.current"]


def max_memory_reserved(device=None) -> int:
    return memory_stats(device)["reserved_bytes.all.peak"]


def reset_peak_memory_stats(device=None) -> None:
    _C._reset_peak_memory_stats(_index(device))


def reset_max_memory_allocated(device=None) -> None:
    reset_peak_memory_stats(device)


def reset_max_memory_reserved(device=None) -> None:
    reset_peak_memory_stats(device)


def reset_accumulated_memory_stats(device=None) -> None:
    _C._reset_accumulated_memory_stats(_index(device))


def empty_cache() -> None:
    """Release cached, unused segments of every device (live tensors are untouched)."""
    _C._empty_cache(-1)


def mem_get_info(device=None) -> tuple[int, int]:
    """(free, total) bytes of the device's emulated HBM."""
    total = get_device_properties(device).total_memory
    return total - memory_reserved(device), total


def _fmt(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    return str(n)


def memory_summary(device=None, abbreviated: bool = False) -> str:
    idx = _index(device)
    s = memory_stats(idx)
    rows = [
        ("Allocated memory", "allocated_bytes", True),
        ("Active memory", "active_bytes", True),
        ("Requested memory", "requested_bytes", True),
        ("Reserved memory", "reserved_bytes", True),
        ("Non-releasable memory", "inactive_split_bytes", True),
        ("Allocations", "allocation", False),
        ("Active allocs", "active", False),
        ("Segments (reserved)", "segment", False),
    ]
    pools = ["all"] if abbreviated else ["all", "large_pool", "small_pool"]
    line = "|" + "=" * 91 + "|"
    out = [
        line,
        f"|{'neuron memory summary, device ID ' + str(idx):^91}|",
        line,
        f"| {'Metric':<32}| {'Cur Usage':>12} | {'Peak Usage':>12} | {'Tot Alloc':>12} | {'Tot Freed':>11} |",
        line,
    ]
    for title, key, is_bytes in rows:
        for pool in pools:
            pfx = f"{key}.{pool}."
            vals = [s[pfx + k] for k in ("current", "peak", "allocated", "freed")]
            f = _fmt if is_bytes else str
            label = title if pool == "all" else f"      from {pool.replace('_pool', '')} pool"
            out.append(
                f"| {label:<32}| {f(vals[0]):>12} | {f(vals[1]):>12} | {f(vals[2]):>12} | {f(vals[3]):>11} |"
            )
        out.append(line)
    out.append(
        f"| Allocation retries: {s['num_alloc_retries']:<10} OOMs: {s['num_ooms']:<10}"
        f" device allocs/frees: {s['num_device_alloc']}/{s['num_device_free']:<16}|"
    )
    out.append(line)
    return "\n".join(out) + "\n"
