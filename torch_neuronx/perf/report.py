"""Entry points the other layers call to put their work on the device clocks.

Every function here assumes the caller already checked :func:`clock.recording` (cheap), so
that nothing is computed while nobody measures. The eager, compile, distributed and NKI layers
call these; the perf layer itself never imports them (it sits below eager).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import torch

from torch_neuronx.runtime.engines import Engine
from torch_neuronx.runtime.op_names import split

from . import clock, params, roofline, target, transfers
from . import events as ev
from . import work as wk
from .collectives import collective_cost
from .graph import GraphPlan

#: ops ("ns::op") whose work records its own events (e.g. NKI kernels, nki/cost.py): the eager
#: hook skips them so that their time is not counted twice
SELF_COSTED: set = set()


def self_costed(op_name: str) -> None:
    """Declares that op ``op_name`` ("ns::op") records its own cost when it runs."""
    SELF_COSTED.add(op_name)


def record(device_index: int, cost: ev.Cost) -> ev.Event:
    """Low-level: put an already computed cost on a device's timeline."""
    return clock.record(device_index, cost)


@functools.lru_cache(maxsize=4096)
def _is_view_op(op_name: str) -> bool:
    """An op whose results alias its inputs without writing them (metadata only)."""
    ns, name, overload = split(op_name)
    packet = getattr(torch.ops.aten, name, None) if ns == "aten" else None
    if packet is None:
        return False
    try:
        schema = getattr(packet, overload or "default")._schema
    except AttributeError:
        return False
    if schema.is_mutable or not schema.returns:
        return False
    return all(r.alias_info is not None and not r.alias_info.is_write for r in schema.returns)


def _signature(v):
    """A hashable summary of an argument: what the cost of an op depends on."""
    if isinstance(v, torch.Tensor):
        return (tuple(v.shape), v.dtype)
    if isinstance(v, (list, tuple)):
        return tuple(_signature(x) for x in v)
    if v is None or isinstance(v, (bool, int, float, str, torch.dtype)):
        return v
    return type(v).__name__


#: op costs by (op, engine, argument and result signature, params, target); an eager loop runs
#: the same few signatures again and again
_op_costs: dict = {}
_OP_COSTS_MAX = 8192


def op(
    device_index: int,
    op_name: str,
    args: Sequence[Any],
    outputs: Any,
    engine: Engine | None = None,
    kwargs: dict | None = None,
) -> ev.Event | None:
    """An eager op that ran natively on ``device_index`` (its real argument and result tensors).
    View ops cost nothing and are not recorded."""
    if _is_view_op(op_name):
        return None
    core = target.current().core
    key = (
        op_name,
        engine,
        _signature(tuple(args)),
        _signature(outputs),
        _signature(tuple(sorted(kwargs.items()))) if kwargs else None,
        params.current(),
        core.generation,
        core.lnc,
    )
    try:
        cost = _op_costs.get(key)
    except TypeError:  # an unhashable argument: cost it without the cache
        key, cost = None, None
    if cost is None:
        w = wk.op_work(op_name, tuple(args), kwargs, outputs, engine, kind=ev.OP)
        cost = roofline.cost_of(w, core, in_graph=False)
        if key is not None:
            if len(_op_costs) >= _OP_COSTS_MAX:
                _op_costs.clear()
            _op_costs[key] = cost
    return clock.record(device_index, cost)


def fallback_op(
    device_index: int,
    op_name: str,
    args: Sequence[Any],
    outputs: Any,
    host_s: float,
    kwargs: dict | None = None,
) -> ev.Event:
    """An op that ran through the CPU fallback; ``host_s`` is the measured host kernel time."""
    ins = [
        t
        for t in wk.tensors_in(tuple(args) + tuple((kwargs or {}).values()))
        if t.device.type != "cpu"
    ]
    outs = wk.tensors_in(outputs if isinstance(outputs, (list, tuple)) else (outputs,))
    shapes = ", ".join("x".join(str(s) for s in t.shape) or "scalar" for t in ins[:4])
    cost = transfers.fallback_cost(
        op_name,
        host_s,
        sum(wk.nbytes(t) for t in ins),
        sum(wk.nbytes(t) for t in outs),
        target.current(),
        shapes,
    )
    return clock.record(device_index, cost)


def copy(device_index: int, direction: str, nbytes: int) -> ev.Event:
    """A copy: ``transfers.H2D``, ``D2H``, ``D2D`` (same device) or ``PEER`` (another core)."""
    return clock.record(
        device_index, transfers.copy_cost(direction, float(nbytes), target.current())
    )


def collective(
    device_index: int, op_name: str, nbytes: int, ranks: Sequence[int], peer: int | None = None
) -> ev.Event:
    """A collective of a process group whose global ranks are ``ranks`` (see
    ``collectives.collective_cost`` for what ``nbytes`` means per collective)."""
    return clock.record(
        device_index, collective_cost(op_name, float(nbytes), list(ranks), target.current(), peer)
    )


def graph(device_index: int, plan: GraphPlan) -> list:
    """One call of a compiled graph: its launch, then each of its kernels."""
    return [clock.record(device_index, c) for c in plan.costs(target.current().core)]
