"""The allocation route the simulator needs, through the runtime's host view of device memory.

Inside the eager path (``run_on_core``) and inside compiled graphs, this thread's CPU
allocations are routed to a neuron device's memory pool (``runtime.host.device_allocations``):
kernel arguments arrive as host aliases of device memory and outputs allocated there become
device memory. The simulator switches routing off for its own scratch (SBUF/PSUM tiles, fp32
temporaries are host memory, not HBM) and back on for the HBM tensors a kernel creates.
"""

from __future__ import annotations

import contextlib

from torch_neuronx.runtime import host

#: the neuron device index this thread's CPU allocations go to, or -1
current_route = host.allocation_route


def routed(index: int):
    """Allocations of this thread from device ``index``'s pool (-1: host memory)."""
    return host.device_allocations(index)


@contextlib.contextmanager
def unrouted():
    """Host-memory allocations for the simulator's own scratch; yields the previous route."""
    prev = host.allocation_route()
    with host.device_allocations(-1):
        yield prev
