"""The same recorded work on another target: re-cost a :class:`~.events.Cost` from its basis.

A recorded cost keeps what it was computed from (``Cost.basis``): the :class:`~.events.Work`
of an eager op or of a compiled graph's kernel, the arguments of a collective, a copy or a
CPU-fallback op. :func:`cost_on` runs the same cost function with another target's hardware
figures, so a projection onto Trn3 of work recorded on an emulated Trn2 is the cost Trn3's
table gives that work -- not a scaled Trn2 figure. The one input that does not change with the
target is a fallback's measured host kernel time (it runs on a host CPU on every instance).

Costs without a basis (NKI kernels, simulated instruction by instruction on the emulated
generation) cannot be re-costed here: :func:`cost_on` returns None and the caller says how it
treats them."""

from __future__ import annotations

import dataclasses

from . import events as ev
from . import roofline, transfers
from .collectives import collective_cost
from .target import Target


def cost_on(cost: ev.Cost, target: Target, *, as_kernel: bool = False) -> ev.Cost | None:
    """``cost``'s work costed on ``target``. ``as_kernel``: an eager op's work as one kernel of
    a compiled graph (no per-op launch; what compiling the same ops would cost)."""
    basis = cost.basis
    kind = cost.kind
    if kind == ev.GRAPH:
        return roofline.graph_launch_cost(cost.name)
    if basis is None:
        return None
    if kind in (ev.OP, ev.KERNEL):
        work = basis
        in_graph = kind == ev.KERNEL or as_kernel
        if in_graph and work.kind != ev.KERNEL:
            work = dataclasses.replace(work, kind=ev.KERNEL)
        return roofline.cost_of(work, target.core, in_graph=in_graph)
    if kind == ev.COLLECTIVE:
        op, nbytes, ranks, in_graph = basis
        return collective_cost(op, nbytes, list(ranks), target, in_graph=in_graph or as_kernel)
    if kind == ev.COPY:
        direction, nbytes = basis
        return transfers.copy_cost(direction, nbytes, target)
    if kind == ev.FALLBACK:
        bytes_in, bytes_out = basis
        return transfers.fallback_cost(
            cost.name, cost.host_s, bytes_in, bytes_out, target, cost.shapes
        )
    return None
