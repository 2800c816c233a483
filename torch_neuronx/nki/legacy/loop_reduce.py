"""``acc[...] = nl.loop_reduce(x, op, loop_indices)`` of the pre-0.2 language.

AWS's page (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.language.loop_reduce.html):
the destination tile is also the right-hand input of ``op``, so the statement is
``acc[...] = op(acc[...], x)`` (one ``tensor_tensor``) repeated over the loop; ``loop_indices``
only tell the compiler which loops it may optimise across. The destination is only known at
the assignment, so ``loop_reduce`` returns a pending reduction that ``t[key] = ...`` performs
in place; any other use of it (``b = nl.loop_reduce(...)`` rebinding a name) is an error
naming the assignment form.
"""

from __future__ import annotations

from .. import isa as _isa
from ..errors import fail
from ..tensor_base import LANGUAGE, register_language


class LoopReduce:
    """``op(dst, x)`` waiting for its destination (``dst[...] = nl.loop_reduce(x, ...)``)."""

    __slots__ = ("x", "op", "mask")

    def __init__(self, x, op, mask):
        self.x, self.op, self.mask = x, op, mask

    def __repr__(self):
        return (
            "<pending nl.loop_reduce: assign it into the accumulator view, "
            "acc[...] = nl.loop_reduce(x, op, loop_indices)>"
        )

    def __getattr__(self, name):  # used as a tile: say how loop_reduce is written
        fail(
            f"the result of nl.loop_reduce has no .{name}: nl.loop_reduce reduces into the "
            f"tile it is assigned to, so write acc[...] = nl.loop_reduce(x, op, loop_indices)"
        )


def loop_reduce(x, op, loop_indices, mask=None, dtype=None, **kwargs):
    """A pending ``op``-reduction of ``x`` into the view it is assigned to (``dtype``: the
    accumulator's, which is the destination's own dtype here)."""
    return LoopReduce(x, op, mask)


_assign = LANGUAGE["assign"]


def _assign_or_reduce(view, value):
    if isinstance(value, LoopReduce):
        # the destination is the right-hand input: acc = op(acc, x), in place
        _isa.tensor_tensor(dst=view, data1=view, data2=value.x, op=value.op, mask=value.mask)
        return
    _assign(view, value)


register_language(assign=_assign_or_reduce)
