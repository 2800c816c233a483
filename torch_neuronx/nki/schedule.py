"""Scheduling edges: ``kernel.with_schedule([("plus1", "recip"), ...])`` (NKI 2.33).

AWS's guide "How to Use the NKI Scheduling APIs"
(https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/guides/how-to-scheduling-apis.html):
instructions get names (the ``name=`` argument of ``nki.isa`` calls), and each pair
``(after, before)`` (``before`` a name or a list of names) adds a dependency edge: ``after``
executes once ``before`` has. The compiler checks that the names make sense.

Here the kernel runs in program order, so an edge is honoured on the modeled schedule: an
instruction named ``after`` starts no earlier than the end of the latest instruction named
``before`` issued before it. Checked: the schedule's form; a name no instruction of the launch
carries is an error (as the compiler's check); an edge whose ``before`` comes only later in
program order cannot be honoured by an in-order simulation and is an ``NkiUnsupportedError``
naming the edge.
"""

from __future__ import annotations

import sys

from .errors import NkiUnsupportedError, NkiValidationError, fail


def normalize(edges) -> dict:
    """{after: (before, ...)} from AWS's list of ``(after, before or [befores])`` pairs."""
    out: dict = {}
    try:
        pairs = list(edges)
    except TypeError:
        raise NkiValidationError(
            f"with_schedule takes a list of (name, name or [names]) pairs, got {edges!r}"
        ) from None
    for pair in pairs:
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise NkiValidationError(
                f"with_schedule: each entry is a pair (name, name or [names]), got {pair!r}"
            )
        after, before = pair
        befores = [before] if isinstance(before, str) else list(before)
        if not isinstance(after, str) or not all(isinstance(b, str) for b in befores):
            raise NkiValidationError(f"with_schedule: instruction names are strings, got {pair!r}")
        out.setdefault(after, set()).update(befores)
    return {k: tuple(sorted(v)) for k, v in out.items()}


def _instruction_name():
    """The ``name=`` of the nki.isa call being issued (the outermost nki.isa frame)."""
    f = sys._getframe(2)
    found = None
    while f is not None and f.f_globals.get("__name__", "").startswith("torch_neuronx.nki"):
        if f.f_globals.get("__name__", "").startswith("torch_neuronx.nki.isa"):
            v = f.f_locals.get("name")
            if isinstance(v, str) and v:
                found = v
        f = f.f_back
    return found


class State:
    """One launch's scheduling state."""

    def __init__(self, edges: dict):
        self.edges = edges
        self.names = {n for k, v in edges.items() for n in (k, *v)}
        self.ends = {}  # name -> modeled end of its latest instruction
        self.pending = None  # name of the instruction being issued
        self.seen = set()


def note(ex):
    """At each instruction (execution.begin): close the previous named instruction, and hold
    this one until its ``before`` instructions have ended."""
    st = ex.schedule
    tl = ex.timeline
    if st.pending is not None and tl is not None:
        st.ends[st.pending] = tl.last_end
    name = _instruction_name()
    st.pending = name if name in st.names else None
    if name is None:
        return
    st.seen.add(name)
    befores = st.edges.get(name)
    if not befores or tl is None:
        return
    later = [b for b in befores if b not in st.ends]
    if later:
        fail(
            f"with_schedule: '{name}' depends on {later}, which no instruction before it in "
            f"program order is named (a later one, or none); the simulator runs instructions "
            f"in program order and can honour an edge only towards earlier instructions",
            NkiUnsupportedError,
        )
    tl.not_before = max(st.ends[b] for b in befores)


def finish(ex):
    st = ex.schedule
    if st is None:
        return
    if st.pending is not None and ex.timeline is not None:
        st.ends[st.pending] = ex.timeline.last_end
    unknown = sorted(st.names - st.seen)
    if unknown:
        raise NkiValidationError(
            f"kernel '{ex.kernel_name}': with_schedule names {unknown}, but no instruction of "
            f"the launch has that name (pass name=... to the nki.isa calls)"
        )
