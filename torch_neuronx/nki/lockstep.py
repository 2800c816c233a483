"""The two programs of an LNC=2 launch run as coroutines, for kernels that talk between the
pair's cores (``nisa.sendrecv``, ``nisa.core_barrier``).

Most kernels run their SPMD programs one after another (nki/kernel.py). A kernel whose
programs exchange tiles cannot: each core's ``sendrecv`` receives what the other core sends
at the same moment. AWS's simulator runs the two programs as two Python threads; here too,
but only one thread runs at a time and the turn passes at a communication point, so a run is
deterministic: program 0 runs until it must wait (a ``sendrecv`` whose peer has not sent
yet, a ``core_barrier`` its peer has not reached), then program 1 runs until it waits or
ends, and so on. A program waiting for a peer that has ended is a deadlock, reported with
the waiting line.

What each program owns of the launch state (its ids, tiles, registers, shared-HBM cursor,
physical core on the modeled schedule) is swapped in when it gets the turn.
"""

from __future__ import annotations

import threading
import types

from . import capacity
from ._device import unrouted
from .errors import fail
from .running import slot as _tls

_PROGRAM_STATE = ("program_ids", "tiles", "shared_cursor", "act_regs", "vec_regs")


class _Abort(BaseException):
    """Ends a waiting program when its peer failed (never seen by kernel code)."""


class Pair:
    """The scheduler of one launch's two programs (``ex.lockstep`` while it runs)."""

    def __init__(self, ex):
        self.ex = ex
        self.cond = threading.Condition()
        self.turn = 0
        self.done = [False, False]
        self.error = None
        self.state = [None, None]  # each program's launch state while the other runs
        self.mail = {}  # (pipe_id, from rank, to rank) -> [values sent, in order]
        self.barriers = [0, 0]  # core_barrier calls each program has reached

    # ---- turns
    def _swap_to(self, rank: int):
        ex = self.ex
        me = self.turn
        tl = ex.timeline
        core = tl.core_index if tl is not None else 0
        self.state[me] = tuple(getattr(ex, f) for f in _PROGRAM_STATE) + (core,)
        saved = self.state[rank]
        if saved is not None:  # None: the program has not started (begin_program sets it up)
            for f, v in zip(_PROGRAM_STATE, saved, strict=False):
                setattr(ex, f, v)
            if tl is not None:
                tl.core_index = saved[-1]
        self.turn = rank

    def wait_until(self, rank: int, ready, what: str):
        """Give the turn to the peer until ``ready()``; a peer that has ended is a deadlock."""
        peer = 1 - rank
        while not ready():
            if self.done[peer]:
                fail(
                    f"deadlock: program {rank} waits for {what}, but program {peer} has ended "
                    f"without it (every sendrecv/core_barrier needs its partner on the other core)"
                )
            with self.cond:
                self._swap_to(peer)
                self.cond.notify_all()
                self.cond.wait_for(lambda: self.turn == rank or self.error is not None)
                if self.error is not None:
                    raise _Abort()

    # ---- communication
    def send(self, pipe, src_rank, dst_rank, value):
        self.mail.setdefault((pipe, src_rank, dst_rank), []).append(value)

    def receive(self, pipe, src_rank, dst_rank, rank: int):
        box = self.mail.setdefault((pipe, src_rank, dst_rank), [])
        self.wait_until(rank, lambda: bool(box), f"a sendrecv from rank {src_rank}")
        return box.pop(0)

    def barrier(self, rank: int):
        self.barriers[rank] += 1
        n = self.barriers[rank]
        self.wait_until(rank, lambda: self.barriers[1 - rank] >= n, "the peer's core_barrier")

    # ---- running
    def run(self, programs, start_program, fn, args, kwargs):
        """Run the two programs; returns program 0's result."""
        results = [None, None]
        ex = self.ex

        def body(rank):
            try:
                with self.cond:
                    self.cond.wait_for(lambda: self.turn == rank or self.error is not None)
                    if self.error is not None:
                        return
                _tls.ex = ex
                with unrouted():
                    start_program(rank)
                    results[rank] = fn(*args, **kwargs)
                    capacity.check(ex)
            except _Abort:
                return
            except BaseException as e:  # noqa: BLE001 - re-raised by the launching thread
                with self.cond:
                    if self.error is None:
                        self.error = e
                    self.cond.notify_all()
                return
            finally:
                _tls.ex = None
            with self.cond:
                self.done[rank] = True
                if not self.done[1 - rank]:
                    self._swap_to(1 - rank)
                self.cond.notify_all()

        ex.lockstep = self
        threads = [threading.Thread(target=body, args=(r,), daemon=True) for r in (0, 1)]
        try:
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        finally:
            ex.lockstep = None
        if self.error is not None:
            raise self.error
        return results[0]


def uses_communication(fn) -> bool:
    """Whether ``fn``, a function defined in it, or a module-level function it calls names
    ``sendrecv`` or ``core_barrier``: such a kernel's LNC pair runs as coroutines."""
    seen = set()
    stack = [(getattr(fn, "__code__", None), getattr(fn, "__globals__", {}))]
    while stack:
        c, glb = stack.pop()
        if c is None or c in seen:
            continue
        seen.add(c)
        if "sendrecv" in c.co_names or "core_barrier" in c.co_names:
            return True
        stack.extend((k, glb) for k in c.co_consts if hasattr(k, "co_names"))
        for n in c.co_names:  # helpers the kernel calls (plain functions and other kernels)
            f = glb.get(n)
            f = getattr(f, "fn", f)
            if isinstance(f, types.FunctionType):
                stack.append((f.__code__, f.__globals__))
    return False
