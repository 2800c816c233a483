"""The performance model's view of a compiled graph: the kernels it would become on Trainium.

Computed once per graph at compile time from the ATen graph handed to the backend (see
torch_neuronx/perf/graph.py and docs/perf-model.md), stored on the executable (and with it in
the persistent cache) and put on the device clock at each call while somebody measures.
"""

from __future__ import annotations

import warnings

import torch.fx

from torch_neuronx.eager.op_policy import engine_for
from torch_neuronx.perf import graph as perf_graph


def plan(aten_gm: torch.fx.GraphModule, name: str):
    """The graph's kernel plan, or None (with a warning) when the planner cannot read it: the
    graph still compiles and runs, its calls are then not costed."""
    try:
        return perf_graph.plan_graph(aten_gm, name, engine_for)
    except Exception as e:  # noqa: BLE001 - the model must never break compilation
        warnings.warn(
            f"torch_neuronx.perf: no kernel plan for compiled graph {name} "
            f"({type(e).__name__}: {e}); its calls are not costed by the performance model",
            stacklevel=2,
        )
        return None
