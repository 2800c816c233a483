"""Decomposition table used by AOTAutograd for the neuron op set.

The table is Inductor's (Inductor's CPU code generator is the device compiler of the emulated
NeuronCore, so its op set is the one our code generator lowers). Every decomposition is
wrapped so that the nodes it produces record the op the user's program dispatched
(``node.meta["custom"]["neuron_decomposed_from"]``): the legality pass checks *that* op
against the eager op policy, so that an op the policy lists (native, or a fallback such as
TorchNeuron's host linalg) keeps its status whatever Inductor decomposes it into. An op the
policy does not list is legal when every node its decomposition produced is legal on its own
("compiled through its decomposition", legality.check_graph): e.g. ``unfold_backward``.

(Adding torch._decomp decompositions for every op the eager policy does not list as native
was tried and dropped: the policy's default for unlisted ops is "fallback", and many of
those decompositions -- ``item``, ``sym_numel``, ``lift`` -- break tracing.)
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

import torch
import torch.fx.traceback as fx_traceback

from torch_neuronx.eager import int_histc

from . import legality, random_inputs
from .host_decompositions import host_branch_table
from .legality import DECOMPOSED_FROM

__all__ = ["DECOMPOSED_FROM", "neuron_decompositions"]

_state = threading.local()


def _annotated(op, fn: Callable) -> Callable:
    """Run decomposition ``fn`` of ``op`` so that every node it creates records ``op``
    (the op the user's program dispatched, which is what the legality pass checks)."""
    name = legality.op_name(op) or str(op)

    @functools.wraps(fn)
    def run(*args, **kwargs):
        if getattr(_state, "depth", 0):
            return fn(*args, **kwargs)
        _state.depth = 1
        try:
            with fx_traceback.annotate({DECOMPOSED_FROM: name}):
                return fn(*args, **kwargs)
        finally:
            _state.depth = 0

    return run


def neuron_decompositions() -> dict[Any, Callable]:
    from torch._inductor.decomposition import select_decomp_table

    # the host's branch where a decomposition tests the device type (host_decompositions.py)
    table = host_branch_table(select_decomp_table())
    table[torch.ops.aten.histc.default] = _histc
    # *_like random ops: their layout chain is marked for the random-input pass
    for op in random_inputs.RANDOM_LIKE_OPS:
        if op in table:
            table[op] = _random_like(table[op])
    return {op: _annotated(op, fn) for op, fn in table.items()}


def _random_like(fn: Callable) -> Callable:
    """Inductor's ``rand_like``/``randn_like``/``randint_like`` with the nodes it writes
    marked (``random_inputs.RANDOM_LIKE``): a non-contiguous ``x`` becomes a contiguous draw
    that is permuted, which the random-input pass then draws as eager does, into x's strides
    (random_inputs.py, "Layouts"); a user's own permute of a draw is not marked."""

    @functools.wraps(fn)
    def run(*args, **kwargs):
        with fx_traceback.annotate({random_inputs.RANDOM_LIKE: True}):
            return fn(*args, **kwargs)

    return run


def _histc(x, bins=100, min=0, max=0):
    """Integer histc as eager runs it (eager/int_histc.py): Inductor's CPU code would call
    CPU's kernel, which takes floating inputs only. Floating inputs keep the aten op."""
    if x.is_floating_point() or x.is_complex() or x.dtype == torch.bool:
        return NotImplemented
    return int_histc.histc_int(x, bins, min, max)
