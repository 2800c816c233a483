"""Collectives across the processes of a ``torch.distributed`` job: a collective kernel called
by every rank of the job (one process per rank, as ``torchrun`` starts it on hardware) meets
the other processes at each collective.

When ``torch.distributed`` is initialised with more than one process and the kernel is not
running under ``run_ranks``, the rank is the process's global rank and each collective call
exchanges its :class:`~.meeting.Part` with every process of the job (``all_gather_object`` on
a gloo group over the job's store, created by the first collective: every process reaches
it). Every process of the job must issue the same collectives in the same order (as on
hardware), each with its own sub-group. A process whose collective fails a rule still takes
part in the exchange, with its error, so the others raise naming it instead of waiting; a
process that fails elsewhere in the kernel leaves the others waiting (the job's timeout).
"""

from __future__ import annotations

import threading

_state = threading.local()  # exchanged: whether the running collective call has exchanged
_groups = {}  # id(default process group) -> the gloo group of the exchanges


def current():
    """The job's ProcessWorld and this process's rank, or None when there is no job."""
    try:
        import torch.distributed as dist
    except ImportError:  # pragma: no cover - torch without distributed
        return None
    if not dist.is_available() or not dist.is_initialized() or dist.get_world_size() < 2:
        return None
    return ProcessWorld(dist.get_world_size()), dist.get_rank()


def _group():
    import torch.distributed as dist

    key = id(dist.distributed_c10d._get_default_group())
    g = _groups.get(key)
    if g is None:
        g = _groups[key] = dist.new_group(backend="gloo")
    return g


class ProcessWorld:
    """The ranks of a ``torch.distributed`` job, seen by the collectives."""

    def __init__(self, size: int):
        self.size = size

    def exchange(self, payload) -> list:
        import torch.distributed as dist

        out = [None] * self.size
        dist.all_gather_object(out, payload, group=_group())
        _state.exchanged = True
        return out


def begin_call():
    _state.exchanged = False


def abandon(message: str):
    """A rule failed here before the exchange: take part with the error, so the other
    processes raise instead of waiting."""
    if getattr(_state, "exchanged", True):
        return
    w = current()
    if w is not None:
        w[0].exchange(("error", message))
