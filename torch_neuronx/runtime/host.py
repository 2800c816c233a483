"""The host view of device memory: the one entry point every layer uses.

The emulated NeuronCore's memory is host RAM, so a neuron tensor can be viewed as a CPU tensor
over the same bytes (no copy), CPU kernels can allocate straight from a device's memory pool,
and CPU-produced results can be adopted as neuron tensors. This is how compiled graphs
(Inductor's CPU kernels), collectives (gloo) and the NKI simulator run on device memory. The
driver's eager path and its c10d kernels use the same C++ functions
(csrc/runtime/host_alias.h, csrc/runtime/allocator.h).
"""

from __future__ import annotations

import torch

from torch_neuronx import _C

__all__ = ["host_alias", "adopt", "device_allocations", "allocation_route"]

#: ``host_alias(t)``: a CPU tensor sharing memory (sizes, strides, offset, conj/neg bits) with
#: neuron tensor ``t``; other tensors are returned unchanged. Writes through the alias land on
#: the device. The driver function itself, with no Python wrapper: compiled graphs and
#: collectives call it for every tensor.
host_alias = _C._host_alias


def _index(device) -> int:
    if isinstance(device, int):
        return device
    index = (device if isinstance(device, torch.device) else torch.device(device)).index
    return _C._current_device() if index is None else index


def adopt(t: torch.Tensor, device) -> torch.Tensor:
    """Turn CPU tensor ``t`` into a neuron tensor on ``device`` (a device, its name or its
    index). Zero-copy when ``t``'s memory was allocated inside :func:`device_allocations` for
    that device, else a copy."""
    return _C._adopt_host_tensor(t, _index(device))


class device_allocations:
    """While active, CPU allocations made by this thread come from the neuron device: from its
    host workspace, whose blocks become device memory when :func:`adopt`-ed (a kernel's
    outputs; its temporaries never count), or -- ``as_device_memory=True`` -- from the
    device's memory itself, each allocation capacity-checked (``torch.OutOfMemoryError``) and
    counted in the device's statistics from the moment it is made: what a compiled graph's
    intermediates are on Trainium (they live in HBM). ``device`` is a device, its name or its
    index; -1 routes allocations back to host memory for the duration (scratch that is not
    device memory)."""

    __slots__ = ("_route", "_prev")

    def __init__(self, device, *, as_device_memory: bool = False) -> None:
        index = _index(device)
        self._route = index | _C._ROUTE_DEVICE_MEMORY if as_device_memory and index >= 0 else index

    def __enter__(self) -> device_allocations:
        self._prev = _C._set_alloc_route(self._route)
        return self

    def __exit__(self, *exc) -> None:
        _C._set_alloc_route(self._prev)


def allocation_route() -> int:
    """The device index this thread's CPU allocations currently go to, or -1 (host memory)."""
    route = _C._alloc_route()
    return route if route < 0 else route & ~_C._ROUTE_DEVICE_MEMORY
