"""The ranks of a collective launch: one kernel launch per rank, run as coroutines that meet
at each ``nki.collectives`` call.

On hardware a kernel that calls ``nki.collectives.all_reduce`` runs once on every rank (a
logical NeuronCore of the job, as a process of a distributed launch does), and the CC-Cores
carry the data between them. Here :func:`run_ranks` launches the kernel once per rank, each
with its own arguments, on its own thread, but only one thread runs at a time (the way
nki/lockstep.py runs an LNC pair): rank 0 runs until it reaches a collective its group has
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

# slot.world / slot.rank: the launch of ranks this thread runs one rank of (absent otherwise)
slot = threading.local()


class _Abort(BaseException):
    """Ends a waiting rank when another rank failed (never seen by kernel code)."""


def current():
    """(world, rank) of the running thread, or (None, 0) outside :func:`run_ranks`."""
    return getattr(slot, "world", None), getattr(slot, "rank", 0)


class World:
    """The scheduler of one launch's ranks and the collectives' meeting places."""

    def __init__(self, n: int):
        self.size = n
        self.cond = threading.Condition()
        self.turn = 0
        self.done = [False] * n
        self.waiting = [None] * n  # rank -> (ready, what) while it waits
        self.error = None
        self.meetings = {}  # key -> Meeting
        self.calls = {}  # (rank, program ids, group) -> collectives called so far

    # ---- turns
    def _next(self, rank: int):
        for k in range(1, self.size + 1):
            q = (rank + k) % self.size
            if q == rank or self.done[q]:
                continue
            w = self.waiting[q]
            if w is None or w[0]():
                return q
        return None

    def wait_until(self, rank: int, ready, what: str, fail):
        """Give the turn to other ranks until ``ready()``; nobody able to run is a deadlock,
        raised through ``fail`` (which names the waiting kernel line)."""
        while not ready():
            nxt = self._next(rank)
            if nxt is None:
                others = [
                    f"rank {q} "
                    + ("has ended" if self.done[q] else f"waits at {self.waiting[q][1]}")
                    for q in range(self.size)
                    if q != rank
                ]
                fail(
                    f"deadlock: rank {rank} waits at {what}, and no other rank can reach it "
                    f"({'; '.join(others) or 'no other rank'}); every rank of a replica group "
                    f"must issue the same collectives in the same order"
                )
            self.waiting[rank] = (ready, what)
            with self.cond:
                self.turn = nxt
                self.cond.notify_all()
                self.cond.wait_for(lambda: self.turn == rank or self.error is not None)
                if self.error is not None:
                    raise _Abort()
            self.waiting[rank] = None

    def _finish(self, rank: int):
        with self.cond:
            self.done[rank] = True
            nxt = self._next(rank)
            if nxt is None:  # everybody ended, or the rest wait: let one find its deadlock
                nxt = next((q for q in range(self.size) if not self.done[q]), rank)
            self.turn = nxt
            self.cond.notify_all()

    # ---- meetings
    def sequence(self, rank: int, program, group: tuple) -> int:
        key = (rank, program, group)
        n = self.calls.get(key, 0)
        self.calls[key] = n + 1
        return n

    def run(self, launch, args_per_rank, kwargs_per_rank):
        results = [None] * self.size

        def body(rank):
            slot.world, slot.rank = self, rank
            try:
                with self.cond:
                    self.cond.wait_for(lambda: self.turn == rank or self.error is not None)
                    if self.error is not None:
                        return
                results[rank] = launch(*args_per_rank[rank], **kwargs_per_rank[rank])
            except _Abort:
                return
            except BaseException as e:  # noqa: BLE001 - re-raised by the launching thread
                with self.cond:
                    if self.error is None:
                        self.error = e
                    self.cond.notify_all()
                return
            finally:
                slot.world = None
            self._finish(rank)

        threads = [threading.Thread(target=body, args=(r,), daemon=True) for r in range(self.size)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if self.error is not None:
            raise self.error
        return results


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
