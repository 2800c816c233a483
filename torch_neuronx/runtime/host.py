"""Host aliasing: the emulated NeuronCore's memory is host RAM, so a neuron tensor
can be viewed as a CPU tensor over the same bytes (no copy), and CPU-produced
results can be adopted as neuron tensors.

This is the one seam through which the compile and distributed layers run CPU code
(Inductor kernels, gloo) directly on device memory.
"""
from __future__ import annotations

import contextlib

import torch

from torch_neuronx import _C


def host_alias(t: torch.Tensor) -> torch.Tensor:
    """A CPU tensor sharing memory (sizes, strides, offset) with neuron tensor ``t``.
    CPU tensors are returned unchanged. Writes through the alias land on the device."""
    return _C._host_alias(t)


def adopt(t: torch.Tensor, device) -> torch.Tensor:
    """Turn CPU tensor ``t`` into a neuron tensor on ``device``. Zero-copy when ``t``'s
    memory was allocated inside :func:`device_allocations` for that device, else a copy."""
    index = torch.device(device).index
    if index is None:
        index = torch.neuron.current_device()
    return _C._adopt_host_tensor(t, index)


@contextlib.contextmanager
def device_allocations(device):
    """While active, CPU allocations made by this thread come from the neuron device's
    memory pool (accounted and capacity-checked), so CPU kernels write their outputs
    straight into device memory."""
    index = torch.device(device).index
    if index is None:
        index = torch.neuron.current_device()
    prev = _C._set_alloc_route(index)
    try:
        yield
    finally:
        _C._set_alloc_route(prev)
