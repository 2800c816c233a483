"""The two facts the simulator needs from the emulated core's driver.

Inside the eager path (``run_on_core``) and inside compiled graphs, this thread's CPU
allocations are routed to a neuron device's memory pool (``_C._set_alloc_route``): kernel
arguments arrive as host aliases of device memory and outputs allocated there become device
memory. The simulator switches routing off for its own scratch (SBUF/PSUM tiles, fp32
temporaries are host memory, not HBM) and back on for the HBM tensors a kernel creates.
"""

from __future__ import annotations

import contextlib


def _c():
    from torch_neuronx import _C

    return _C


def current_route() -> int:
    """The neuron device index this thread's CPU allocations go to, or -1."""
    c = _c()
    prev = c._set_alloc_route(-1)
    c._set_alloc_route(prev)
    return prev


def set_route(index: int) -> int:
    return _c()._set_alloc_route(index)


@contextlib.contextmanager
def routed(index: int):
    prev = set_route(index)
    try:
        yield
    finally:
        set_route(prev)


@contextlib.contextmanager
def unrouted():
    """Host-memory allocations for the simulator's own scratch; yields the previous route."""
    prev = set_route(-1)
    try:
        yield prev
    finally:
        set_route(prev)
