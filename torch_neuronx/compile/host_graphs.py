"""Graphs that compute on the host only run on the host, as the model wrote them.

Models compute some index arithmetic on CPU on purpose: Inkling2's vision tower moves its image
grid to the CPU (``image_grid_thw.cpu()``) and derives patch positions from it with
``repeat_interleave``, whose data-dependent sizes break Dynamo's graph at every call. Each piece
then reaches the backend as a graph of its own whose inputs are all CPU tensors. The backend's
autocopy (backend._InputPlacement: CPU graph inputs copied to neuron, outputs on neuron) made
those outputs neuron tensors, and the model's next line, ``torch.arange(n, device=grid.device)
- starts``, mixed CPU and neuron: "Tensor device mismatch" (the model-zoo sweep, compiled).

A graph is a host graph when every tensor input is a CPU tensor that is not a module's
parameter or buffer, and no value in it is created on the neuron device. It runs as Dynamo's
eager backend runs a graph (``gm.forward``), on CPU, as the same code runs eagerly. The
autocopy keeps its job: CPU tensors a user *passes* to a compiled function or module
(moved before the compiled region, inputs.py) and modules left on CPU, whose graphs hold their
CPU parameters (copied to neuron, as TorchNeuron documents). The CPU inputs of a graph that
also holds neuron tensors are not copied either (backend._InputPlacement): Dynamo traced the
graph with them on CPU, so they feed CPU ops (or CPU scalars), and their results stay CPU as
they are eagerly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch


def _values(gm: torch.fx.GraphModule):
    for node in gm.graph.nodes:
        val = node.meta.get("val", node.meta.get("example_value"))
        vals = val if isinstance(val, (list, tuple)) else (val,)
        yield from (v for v in vals if isinstance(v, torch.Tensor))


def is_host_graph(
    gm: torch.fx.GraphModule, example_inputs: Sequence[Any], sources: Sequence[str | None]
) -> bool:
    """See the module docstring. ``sources``: Dynamo's source name of each graph input
    (backend._input_sources); a module's parameter or buffer is named by its
    ``_parameters[...]`` / ``_buffers[...]`` entry."""
    tensors = [(i, x) for i, x in enumerate(example_inputs) if isinstance(x, torch.Tensor)]
    if not tensors:
        return False
    for i, x in tensors:
        if x.device.type != "cpu" or isinstance(x, torch.nn.Parameter):
            return False
        name = (sources[i] if i < len(sources) else None) or ""
        if "_parameters[" in name or "_buffers[" in name:
            return False
    return all(v.device.type != "neuron" for v in _values(gm))
