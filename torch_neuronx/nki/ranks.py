"""The ranks of a collective launch: one kernel launch per rank, run as coroutines that meet
at each ``nki.collectives`` call.

On hardware a kernel that calls ``nki.collectives.all_reduce`` runs once on every rank (a
logical NeuronCore of the job, as a process of a distributed launch does), and the CC-Cores
carry the data between them. Here :func:`run_ranks` launches the kernel once per rank, each
with its own arguments, on its own thread, but only one thread runs at a time (the lock-step
scheduler of nki/lockstep.py, which runs an LNC pair too): rank 0 runs until it reaches a collective its group has
not all reached, then the next rank runs, and so on. So a run is deterministic and each
collective sees every rank's source tensor as it was at the call. A rank that waits for a
group whose other ranks have ended, or all ranks waiting at collectives nobody can complete,
is a deadlock reported with the waiting collective.

Each rank's launch is an ordinary one (its own tiles, registers, report and modeled
timeline); a rank's ``nl.program_id`` grid (``kernel[2]`` for LNC=2) runs inside it, and the
programs of the same index on each rank meet at their collectives.
"""

from __future__ import annotations

import threading

from .errors import NkiError, NkiValidationError
from .lockstep import Lockstep

# slot.world / slot.rank: the launch of ranks this thread runs one rank of (absent otherwise)
slot = threading.local()


def current():
    """(world, rank) of the running thread, or (None, 0) outside :func:`run_ranks`."""
    return getattr(slot, "world", None), getattr(slot, "rank", 0)


class World(Lockstep):
    """The ranks of one collective launch (nki/lockstep.py runs them) and the collectives'
    meeting places."""

    def __init__(self, n: int):
        super().__init__(n)
        self.meetings = {}  # key -> Meeting
        self.calls = {}  # (rank, program ids, group) -> collectives called so far

    def wait_until(self, rank: int, ready, what: str, fail):
        """Give the turn to other ranks until ``ready()``; nobody able to run is a deadlock,
        raised through ``fail`` (which names the waiting kernel line)."""

        def deadlock(rank, what):
            others = [
                f"rank {q} " + ("has ended" if self.done[q] else f"waits at {self.waiting[q][1]}")
                for q in range(self.size)
                if q != rank
            ]
            fail(
                f"deadlock: rank {rank} waits at {what}, and no other rank can reach it "
                f"({'; '.join(others) or 'no other rank'}); every rank of a replica group "
                f"must issue the same collectives in the same order"
            )

        super().wait_until(rank, ready, what, deadlock)

    # ---- meetings
    def sequence(self, rank: int, program, group: tuple) -> int:
        key = (rank, program, group)
        n = self.calls.get(key, 0)
        self.calls[key] = n + 1
        return n

    def run(self, launch, args_per_rank, kwargs_per_rank):
        def body(rank):
            slot.world, slot.rank = self, rank
            try:
                return launch(*args_per_rank[rank], **kwargs_per_rank[rank])
            finally:
                slot.world = None

        return self.run_parts(body)


def run_ranks(kernel, args_per_rank, kwargs_per_rank=None) -> list:
    """Launch ``kernel`` (or a launch such as ``kernel[2]``) once per rank, as the ranks of one
    collective job: rank ``r`` gets ``args_per_rank[r]`` (a tuple) and ``kwargs_per_rank[r]``
    (a dict). Returns the ranks' results, in rank order.

    ``nki.collectives.rank_id()`` is ``r`` inside rank ``r``'s launch, and every collective
    meets the other ranks of its replica group. The ranks' tensors may be on any neuron
    device (rank ``r`` on ``neuron:r`` mirrors one rank per logical core)."""
    if getattr(slot, "world", None) is not None:
        raise NkiError("run_ranks called from inside a rank of another run_ranks launch")
    args_per_rank = [tuple(a) if isinstance(a, (list, tuple)) else (a,) for a in args_per_rank]
    n = len(args_per_rank)
    if n < 1:
        raise NkiValidationError("run_ranks needs the arguments of at least one rank")
    if kwargs_per_rank is None:
        kwargs_per_rank = [{} for _ in range(n)]
    if len(kwargs_per_rank) != n:
        raise NkiValidationError(
            f"run_ranks: {n} ranks of positional arguments but {len(kwargs_per_rank)} of "
            f"keyword arguments; give one of each per rank"
        )
    if not callable(kernel):
        raise NkiValidationError(f"run_ranks: {kernel!r} is not a kernel or a kernel launch")
    return World(n).run(kernel, args_per_rank, [dict(k) for k in kwargs_per_rank])
