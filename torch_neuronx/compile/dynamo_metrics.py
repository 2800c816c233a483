"""Per-graph records of the ``neuron`` torch.compile backend.

``get_dynamo_metrics()`` returns one dict per compiled graph (a Dynamo graph, or one
static-shape specialisation of it), oldest first:

==================  =================================================================
``name``            ``<model_name>_<n>`` (``model_name`` from ``options``, default
                    ``model_default``)
``function``        the compiled Python function (``file:line:name``)
``graph_index``     the number of distinct input shapes this function had compiled for
                    when this graph's shape was first seen (a shape compiled again --
                    see docs/compile.md, "Static shapes" -- keeps its first index)
``node_count``      nodes in the Dynamo FX graph
``fw_node_count``   nodes in the forward (or inference) ATen graph, ``bw_node_count``
                    in the backward graph (``None`` when there is none)
``input_shapes``    the static input shapes this graph was compiled for
``through_decomposition``  ops the eager policy does not list (eager runs them by CPU
                    fallback) that this graph compiled as their decomposition into native
                    ops, e.g. ``["aten::unfold_backward"]`` (docs/compile.md, legality)
``cache``           ``"hit"`` (code generation skipped: every ATen graph came from the
                    persistent cache), ``"miss"``, ``"disabled"`` or ``"fallback"``
                    (graph runs eagerly, see fallback_execution)
``aot_autograd_s``  seconds in AOTAutograd (tracing, decomposition, partitioning)
``lowering_s``      seconds in our passes (legality, device rewrite, fake propagation)
``codegen_s``       seconds in Inductor code generation (or cache load)
``total_s``         wall time of the whole backend call
``timestamp``       ``time.time()`` at the end of compilation
==================  =================================================================
"""

from __future__ import annotations

import collections
import threading
from typing import Any

_lock = threading.Lock()
_records: list[dict[str, Any]] = []
_graphs_per_function: dict[str, int] = collections.Counter()
# function -> {input shape signature: graph_index of its first compile}
_shapes_per_function: dict[str, dict[Any, int]] = collections.defaultdict(dict)


def _add_record(record: dict[str, Any]) -> dict[str, Any]:
    with _lock:
        _records.append(record)
    return record


def _next_graph_index(function: str, signature: Any) -> tuple[int, bool]:
    """(graph_index, new): each distinct input signature of a function counts once."""
    with _lock:
        seen = _shapes_per_function[function]
        if signature in seen:
            return seen[signature], False
        _graphs_per_function[function] += 1
        seen[signature] = _graphs_per_function[function]
        return seen[signature], True


_failures: list[dict[str, Any]] = []


def record_failure(function: str, error: BaseException, stack: list) -> None:
    """A graph the backend failed to compile. Kept apart from the graph records because a
    script may catch the error and carry on (timm's benchmark does): the evaluation report
    still has to call it a blocking failure. ``stack``: (file, line, function) outermost first."""
    import time

    with _lock:
        _failures.append(
            {
                "function": function,
                "type": type(error).__name__,
                "message": str(error)[:2000],
                "stack": stack,
                "timestamp": time.time(),
            }
        )


def get_compile_failures() -> list[dict[str, Any]]:
    """The backend's compile failures (fresh dicts), oldest first."""
    with _lock:
        return [dict(r) for r in _failures]


def get_dynamo_metrics() -> list[dict[str, Any]]:
    """One record (a fresh dict) per graph compiled by the ``neuron`` backend."""
    with _lock:
        return [dict(r) for r in _records]


def get_graph_counts() -> dict[str, int]:
    """Number of graphs -- distinct input shapes -- compiled so far for each compiled
    function (``name (file:line) [frame N]``)."""
    with _lock:
        return dict(_graphs_per_function)


def reset_dynamo_metrics() -> None:
    """Forget every record and per-function graph count."""
    with _lock:
        _records.clear()
        _failures.clear()
        _graphs_per_function.clear()
        _shapes_per_function.clear()
