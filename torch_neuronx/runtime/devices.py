"""Device management of torch.neuron (shaped like torch.cuda): count, current device,
properties, synchronisation."""

from __future__ import annotations

import dataclasses

import torch

from torch_neuronx import _C
from torch_neuronx.runtime import topology


def _index(device=None) -> int:
    """Device index from an int, string, torch.device or None (current device)."""
    if device is None:
        return _C._current_device()
    if isinstance(device, int):
        idx = device
    else:
        d = torch.device(device)
        if d.type != "neuron":
            raise ValueError(f"Expected a neuron device, got {d}")
        idx = _C._current_device() if d.index is None else d.index
    _C._check_device_index(idx)
    return idx


def is_available() -> bool:
    try:
        return device_count() > 0
    except Exception:
        return False


def device_count() -> int:
    return _C._device_count()


def is_initialized() -> bool:
    return _C._is_initialized()


def init() -> None:
    _C._init()


def current_device() -> int:
    return _C._current_device()


def set_device(device) -> None:
    idx = _index(device)
    _C._set_device(idx)


class device:
    """Context manager that changes the current neuron device."""

    def __init__(self, device):
        self.idx = -1 if device is None else _index(device)
        self.prev = -1

    def __enter__(self):
        self.prev = _C._current_device()
        if self.idx >= 0:
            _C._set_device(self.idx)
        return self

    def __exit__(self, *exc):
        if self.idx >= 0:
            _C._set_device(self.prev)
        return False


class device_of(device):
    """Context manager that makes the device of tensor ``obj`` current (no-op for CPU)."""

    def __init__(self, obj):
        idx = obj.get_device() if obj.device.type == "neuron" else -1
        super().__init__(idx if idx >= 0 else None)


@dataclasses.dataclass(frozen=True)
class NeuronDeviceProperties:
    name: str
    total_memory: int
    index: int
    profile: str
    logical_core_id: int
    lnc: int
    core_name: str  # "NeuronCore-v3" (Trn2) / "NeuronCore-v4" (Trn3)
    physical_cores: int

    def __repr__(self):
        return (
            f"NeuronDeviceProperties(name='{self.name}', total_memory={self.total_memory >> 20}MB, "
            f"profile='{self.profile}', logical_core_id={self.logical_core_id}, lnc={self.lnc})"
        )


def get_device_properties(device=None) -> NeuronDeviceProperties:
    idx = _index(device)
    _C._init()
    topo = topology.current()
    core_name = topo.profile.core_name
    return NeuronDeviceProperties(
        name=f"Emulated {core_name} logical core (LNC={topo.lnc}, {topo.profile.name})",
        total_memory=topo.hbm_per_core,
        index=idx,
        profile=topo.profile.name,
        logical_core_id=topo.visible_cores[idx],
        lnc=topo.lnc,
        core_name=core_name,
        physical_cores=topo.lnc,
    )


def get_device_name(device=None) -> str:
    return get_device_properties(device).name


def get_device_capability(device=None) -> tuple[int, int]:
    get_device_properties(device)  # checks the index
    return (topology.current().core.core.version, 0)  # NeuronCore-vN -> (N, 0)


def synchronize(device=None) -> None:
    """Wait for all queued work on the device (execution is synchronous today)."""
    idx = _index(device)
    _C._synchronize(idx)
