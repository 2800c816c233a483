"""``nki.isa.NkiInstruction``: the handle every ``nki.isa`` (and ``nki.collectives``) call
returns, and its ``depends_on(*producers)`` scheduling edges (NKI 2.33: "Opaque handle to a
traced NKI instruction ... Use ``.depends_on(*producers)`` to add scheduling dependencies (this
instruction runs after every listed producer completes)", the ``nki.isa`` stub of
aws-neuron/aws-neuron-sdk; https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/nki/api/nki.isa.html).

The simulator executes an instruction when it is called, in program order, so the values
never depend on an edge (an edge is between instructions with no data between them); the edge
is honoured on the modeled schedule: the consumer starts no earlier than its producers end.
As ``depends_on`` is called after the consumer was issued, the consumer is moved later on the
schedule, which is possible while it is the launch's latest instruction (the usual form,
``c = nisa.x(...); c.depends_on(a, b)``); an edge set after later instructions were issued,
or towards a producer issued after the consumer, raises ``NkiUnsupportedError`` naming it.
"""

from __future__ import annotations

import functools

from .errors import NkiUnsupportedError, fail
from .running import slot


class NkiInstruction:
    """Handle of an issued instruction: its launch, its place in the instruction stream and
    its entry on the modeled schedule (None when it issued none, e.g. a register move)."""

    __slots__ = ("ex", "index", "issue", "opcode")

    def __init__(self, ex, index, issue, opcode):
        self.ex = ex
        self.index = index
        self.issue = issue  # Timeline.last_issue of the instruction, or None
        self.opcode = opcode

    def depends_on(self, *producers) -> NkiInstruction:
        """This instruction runs after every producer completes (modeled schedule)."""
        for p in producers:
            if not isinstance(p, NkiInstruction):
                fail(f"{self.opcode}.depends_on takes instruction handles, got {type(p).__name__}")
            if p.ex is not self.ex:
                fail(f"{self.opcode}.depends_on: {p.opcode} belongs to another kernel launch")
            if p.index > self.index:
                fail(
                    f"{self.opcode}.depends_on({p.opcode}): the producer is issued after the "
                    f"consumer in program order; the simulator runs instructions in program order "
                    f"and cannot move the consumer after a later instruction",
                    NkiUnsupportedError,
                )
        tl = self.ex.timeline
        mine = self.issue
        ends = [p.issue[3] for p in producers if p.issue is not None]
        if tl is None or mine is None or not ends or mine[2] >= max(ends):
            return self  # shapes only / nothing on the schedule / already after its producers
        if tl.last_issue is not mine:
            fail(
                f"{self.opcode}.depends_on: other instructions were issued after this one; in the "
                f"simulator call depends_on right after the consumer's instruction",
                NkiUnsupportedError,
            )
        self.issue = tl.delay_last(max(ends))
        return self

    def __repr__(self):
        return f"NkiInstruction({self.opcode} #{self.index})"


def returning_handle(fn, opcode=None):
    """Wrap an instruction function: it returns its NkiInstruction (what it returned, if not
    None, is kept: registers, values). Kept lean: it runs around every instruction."""
    name = opcode or fn.__name__
    new = NkiInstruction.__new__

    @functools.wraps(fn)
    def call(*args, **kwargs):
        ex = getattr(slot, "ex", None)
        if ex is None:
            return fn(*args, **kwargs)  # raises the "only inside a kernel" error
        tl = ex.timeline
        before = None if tl is None else tl.last_issue
        r = fn(*args, **kwargs)
        if r is not None:
            return r
        h = new(NkiInstruction)
        h.ex = ex
        h.index = ex.counter
        after = None if tl is None else tl.last_issue
        h.issue = after if after is not before else None
        h.opcode = name
        return h

    return call
