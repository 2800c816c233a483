"""Memory snapshots of the neuron allocator in torch.cuda's format.

``torch.neuron.memory._record_memory_history()``, ``_snapshot()`` and ``_dump_snapshot()`` take
the same arguments as their ``torch.cuda.memory`` namesakes and produce the same dictionary
(``segments``, ``device_traces`` with ``alloc`` / ``free_requested`` / ``free_completed`` /
``segment_alloc`` / ``segment_free`` / ``oom`` / ``snapshot`` actions, stack frames as
``{"filename", "line", "name"}``), so PyTorch's own tools read a neuron snapshot unchanged:
``torch.cuda._memory_viz`` (``trace_plot``, ``segment_plot``, ``segsum``, ``trace``, ...) and
the interactive viewer at https://pytorch.org/memory_viz.

The driver's allocator records the events and captures the stacks (PyTorch's
CapturedTraceback, as the CUDA caching allocator does). Frees are synchronous on the emulated
core, so every ``free_requested`` is followed at once by its ``free_completed``.
"""

from __future__ import annotations

import pickle
import sys
from typing import Any, Literal

from torch_neuronx import _C

__all__ = ["_record_memory_history", "_snapshot", "_dump_snapshot", "memory_snapshot"]

#: trace actions, in the driver's order (bit i of the skip mask skips ACTIONS[i])
ACTIONS = (
    "alloc",
    "free_requested",
    "free_completed",
    "segment_alloc",
    "segment_free",
    "oom",
    "snapshot",
)


def _record_memory_history(
    enabled: Literal["state", "all"] | None = "all",
    context: Literal["state", "alloc", "all"] | None = "all",
    stacks: Literal["python", "all"] = "all",
    max_entries: int = sys.maxsize,
    device: Any = None,
    clear_history: bool = False,
    compile_context: bool = False,
    global_record_annotations: bool = False,
    skip_actions: list[str] | None = None,
) -> None:
    """Record the neuron allocator's history (all devices), as ``torch.cuda.memory._record_memory_history``.

    ``enabled``: ``None`` stops recording; ``"state"`` keeps the allocation stack of what is
    allocated now; ``"all"`` also keeps the history of every alloc/free (``device_traces``).
    ``context``: ``None`` records no stacks; ``"state"`` / ``"alloc"`` stacks of allocations;
    ``"all"`` stacks of frees too. ``stacks``: ``"python"`` or ``"all"`` (adds C++ frames).
    ``max_entries``: per device, the newest events are kept. ``device`` is accepted for
    torch.cuda compatibility; recording covers every neuron device, as on CUDA.
    """
    if isinstance(enabled, bool):  # torch.cuda's legacy signature: (enabled: bool, ...)
        enabled = "all" if enabled else None
    if enabled not in (None, "state", "all"):
        raise ValueError(f"enabled must be None, 'state' or 'all', got {enabled!r}")
    if context not in (None, "state", "alloc", "all"):
        raise ValueError(f"context must be None, 'state', 'alloc' or 'all', got {context!r}")
    if stacks not in ("python", "all"):
        raise ValueError(f"stacks must be 'python' or 'all', got {stacks!r}")
    if max_entries < 1:
        raise ValueError(f"max_entries must be >= 1, got {max_entries}")
    if compile_context:
        raise NotImplementedError(
            "torch.neuron.memory._record_memory_history(compile_context=True) is not supported: "
            "the neuron allocator does not record torch.compile context; leave it False"
        )
    if global_record_annotations:
        raise NotImplementedError(
            "torch.neuron.memory._record_memory_history(global_record_annotations=True) is not "
            "supported: the neuron snapshot has no external annotations; leave it False"
        )
    mask = 0
    for action in skip_actions or ():
        if action not in ACTIONS:
            raise ValueError(f"unknown skip_actions entry {action!r}; valid: {', '.join(ACTIONS)}")
        mask |= 1 << ACTIONS.index(action)
    _C._record_memory_history(
        enabled is not None,
        enabled == "all",
        context in ("state", "alloc", "all"),
        context == "all",
        stacks == "all",
        min(int(max_entries), 2**62),
        mask,
        bool(clear_history),
    )


def _snapshot(device: Any = None, augment_with_fx_traces: bool = False) -> dict:
    """The allocator state of every neuron device, as ``torch.cuda.memory._snapshot()``:
    ``{"segments": [...], "device_traces": [[...] per device], "allocator_settings": {...}}``.
    ``device`` is accepted for torch.cuda compatibility (the snapshot covers all devices)."""
    snapshot = _C._memory_snapshot()
    if augment_with_fx_traces:
        from torch.cuda.memory import _augment_memory_snapshot_stack_traces

        snapshot = _augment_memory_snapshot_stack_traces(snapshot)
    return snapshot


def _dump_snapshot(
    filename: str = "dump_snapshot.pickle", augment_with_fx_traces: bool = False
) -> None:
    """Pickle :func:`_snapshot` to ``filename`` (open it at https://pytorch.org/memory_viz)."""
    snapshot = _snapshot(augment_with_fx_traces=augment_with_fx_traces)
    with open(filename, "wb") as f:
        pickle.dump(snapshot, f)


def memory_snapshot(mempool_id=None, include_traces: bool = True) -> list:
    """The allocator's segments across all neuron devices (``torch.cuda.memory_snapshot()``)."""
    if mempool_id is not None:
        raise NotImplementedError(
            "torch.neuron.memory_snapshot(mempool_id=...) is not supported: the neuron allocator "
            "has no private memory pools; call it without mempool_id"
        )
    return _C._memory_snapshot()["segments"]
