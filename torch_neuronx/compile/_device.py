"""The seam to the core device layer (torch_neuronx.runtime.host).

Until the core is importable (it is being written alongside this package) the functions
fall back to identities, so the compile pipeline can be exercised with CPU tensors standing
in for neuron tensors.
"""
from __future__ import annotations

import contextlib

import torch

try:  # pragma: no cover - depends on whether the C++ core is built
    from torch_neuronx.runtime.host import adopt as _adopt
    from torch_neuronx.runtime.host import device_allocations as _device_allocations
    from torch_neuronx.runtime.host import host_alias as _host_alias

    HAVE_CORE = True
except Exception:  # ImportError, or the extension failed to load
    HAVE_CORE = False


def device_type() -> str | None:
    """'neuron' once the core has renamed PrivateUse1, else None."""
    name = torch._C._get_privateuse1_backend_name()
    return None if name == "privateuseone" else name


def is_device_tensor(t) -> bool:
    dt = device_type()
    return dt is not None and isinstance(t, torch.Tensor) and t.device.type == dt


def is_device(dev) -> bool:
    dt = device_type()
    return dt is not None and isinstance(dev, torch.device) and dev.type == dt


def default_device() -> torch.device:
    dt = device_type()
    if dt is None:
        return torch.device("cpu")
    mod = getattr(torch, dt, None)
    index = mod.current_device() if mod is not None and hasattr(mod, "current_device") else 0
    return torch.device(dt, index)


def host_alias(t: torch.Tensor) -> torch.Tensor:
    if HAVE_CORE and is_device_tensor(t):
        return _host_alias(t)
    return t


def adopt(t: torch.Tensor, device: torch.device) -> torch.Tensor:
    if HAVE_CORE and is_device(device):
        return _adopt(t, device)
    return t


def device_allocations(device: torch.device):
    if HAVE_CORE and is_device(device):
        return _device_allocations(device)
    return contextlib.nullcontext()
