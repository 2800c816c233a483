"""Simulated parts of one job that run in lock step: coroutines on threads, one running at a
time, the turn passing only where a part must wait for another.

Two callers: the two programs of an LNC=2 launch whose cores talk to each other
(``nisa.sendrecv``, ``nisa.core_barrier``; :class:`Pair` here), and the ranks of a collective
launch (``nki.collectives.run_ranks``; nki/ranks.py). Most kernels run their SPMD programs one
after another (nki/kernel.py); parts that exchange data cannot: each one's receive gets what
another sends at the same moment. AWS's simulator runs the two programs of a pair as two
Python threads; here too, but only one thread runs at a time, so a run is deterministic: part
0 runs until it must wait (a receive whose sender has not sent yet, a barrier or collective
the others have not reached), then the next part that can go on runs, and so on. A part
waiting when no other can run (they have ended, or wait themselves) is a deadlock, reported
with the waiting kernel line.
"""

from __future__ import annotations

import threading
import types

from . import capacity
from ._device import unrouted
from .errors import fail
from .running import slot as _tls


class _Abort(BaseException):
    """Ends a waiting part when another failed (never seen by kernel code)."""


class Lockstep:
    """The scheduler of ``n`` parts (ranks, programs): whose turn it is, who has ended, who
    waits for what, and the first error (re-raised by the launching thread)."""

    def __init__(self, n: int):
        self.size = n
        self.cond = threading.Condition()
        self.turn = 0
        self.done = [False] * n
        self.waiting = [None] * n  # part -> (ready, what) while it waits
        self.error = None

    def switched(self, before: int, after: int) -> None:
        """The turn passes from part ``before`` to part ``after`` (subclasses swap state)."""

    def _turn_to(self, part: int) -> None:
        if part != self.turn:
            self.switched(self.turn, part)
            self.turn = part

    def _next(self, part: int):
        """The next part after ``part`` that can run (not ended, not waiting for something
        that has not happened), or None."""
        for k in range(1, self.size + 1):
            q = (part + k) % self.size
            if q == part or self.done[q]:
                continue
            w = self.waiting[q]
            if w is None or w[0]():
                return q
        return None

    def wait_until(self, part: int, ready, what: str, deadlock) -> None:
        """Give the turn to other parts until ``ready()``; when none can run, ``deadlock(part,
        what)`` raises (on this part's thread, so the error names its kernel line)."""
        while not ready():
            nxt = self._next(part)
            if nxt is None:
                deadlock(part, what)
            self.waiting[part] = (ready, what)
            with self.cond:
                self._turn_to(nxt)
                self.cond.notify_all()
                self.cond.wait_for(lambda: self.turn == part or self.error is not None)
                if self.error is not None:
                    raise _Abort()
            self.waiting[part] = None

    def _finish(self, part: int) -> None:
        with self.cond:
            self.done[part] = True
            nxt = self._next(part)
            if nxt is None:  # everybody ended, or the rest wait: let one find its deadlock
                nxt = next((q for q in range(self.size) if not self.done[q]), part)
            self._turn_to(nxt)
            self.cond.notify_all()

    def run_parts(self, body) -> list:
        """``body(part)`` for every part, each on its own thread, in lock step; their results
        in part order. The first error of a part is raised here."""
        results = [None] * self.size

        def thread(part):
            try:
                with self.cond:
                    self.cond.wait_for(lambda: self.turn == part or self.error is not None)
                    if self.error is not None:
                        return
                results[part] = body(part)
            except _Abort:
                return
            except BaseException as e:  # noqa: BLE001 - re-raised by the launching thread
                with self.cond:
                    if self.error is None:
                        self.error = e
                    self.cond.notify_all()
                return
            self._finish(part)

        threads = [
            threading.Thread(target=thread, args=(p,), daemon=True) for p in range(self.size)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if self.error is not None:
            raise self.error
        return results


#: what each program of a pair owns of the launch state, swapped in when it gets the turn
#: (with the physical core it runs on in the modeled schedule)
_PROGRAM_STATE = ("program_ids", "tiles", "shared_cursor", "act_regs", "vec_regs")


class Pair(Lockstep):
    """The two programs of an LNC=2 launch that exchange data (``ex.lockstep`` while it runs):
    the pair's mail (``sendrecv``) and barrier counts (``core_barrier``)."""

    def __init__(self, ex):
        super().__init__(2)
        self.ex = ex
        self.state = [None, None]  # each program's launch state while the other runs
        self.mail = {}  # (pipe_id, from rank, to rank) -> [values sent, in order]
        self.barriers = [0, 0]  # core_barrier calls each program has reached

    def switched(self, before: int, after: int) -> None:
        ex = self.ex
        tl = ex.timeline
        core = tl.core_index if tl is not None else 0
        self.state[before] = tuple(getattr(ex, f) for f in _PROGRAM_STATE) + (core,)
        saved = self.state[after]
        if saved is not None:  # None: the program has not started (begin_program sets it up)
            for f, v in zip(_PROGRAM_STATE, saved, strict=False):
                setattr(ex, f, v)
            if tl is not None:
                tl.core_index = saved[-1]

    def _deadlock(self, rank: int, what: str):
        peer = 1 - rank
        if self.done[peer]:
            fail(
                f"deadlock: program {rank} waits for {what}, but program {peer} has ended "
                f"without it (every sendrecv/core_barrier needs its partner on the other core)"
            )
        fail(
            f"deadlock: program {rank} waits for {what}, while program {peer} waits for "
            f"{self.waiting[peer][1]} (every sendrecv/core_barrier needs its partner on the "
            f"other core, in the same order)"
        )

    # ---- communication
    def send(self, pipe, src_rank, dst_rank, value):
        self.mail.setdefault((pipe, src_rank, dst_rank), []).append(value)

    def receive(self, pipe, src_rank, dst_rank, rank: int):
        box = self.mail.setdefault((pipe, src_rank, dst_rank), [])
        what = f"a sendrecv from rank {src_rank}"
        self.wait_until(rank, lambda: bool(box), what, self._deadlock)
        return box.pop(0)

    def barrier(self, rank: int):
        self.barriers[rank] += 1
        n = self.barriers[rank]
        ready = lambda: self.barriers[1 - rank] >= n  # noqa: E731
        self.wait_until(rank, ready, "the peer's core_barrier", self._deadlock)

    # ---- running
    def run(self, programs, start_program, fn, args, kwargs):
        """Run the two programs; returns program 0's result."""
        ex = self.ex

        def body(rank):
            _tls.ex = ex
            try:
                with unrouted():
                    start_program(rank)
                    out = fn(*args, **kwargs)
                    capacity.check(ex)
                return out
            finally:
                _tls.ex = None

        ex.lockstep = self
        try:
            return self.run_parts(body)[0]
        finally:
            ex.lockstep = None


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
