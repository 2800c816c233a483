"""Streams and events (CUDA's interface). Execution is synchronous today: work has finished
when an op returns, so queries are always True and waits return at once; the guard in
csrc/runtime/guard.cpp is where an asynchronous per-stream queue would plug in."""

from __future__ import annotations

import contextlib

import torch

from torch_neuronx.runtime.devices import _index


class _NeuronKind(type):
    """isinstance(x, torch.neuron.Stream) is True for any torch.Stream on a neuron device.

    PyTorch's C++ stream/event methods accept only exact torch.Stream / torch.Event objects,
    so these classes construct plain torch.Stream / torch.Event instances on neuron devices.
    """

    base: type

    def __instancecheck__(cls, obj):
        if not isinstance(obj, cls.base):
            return False
        dev = getattr(obj, "device", None)
        return dev is not None and torch.device(dev).type == "neuron"


class Stream(metaclass=_NeuronKind):
    """A neuron stream (a torch.Stream on a neuron device)."""

    base = torch.Stream

    def __new__(cls, device=None, priority: int = 0, **kwargs):
        if "stream_id" in kwargs:
            return torch.Stream(**kwargs)
        return torch.Stream(device=torch.device("neuron", _index(device)), priority=priority)


class Event(metaclass=_NeuronKind):
    """A neuron event (a torch.Event on a neuron device); elapsed_time needs enable_timing."""

    base = torch.Event

    def __new__(
        cls, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False
    ):
        return torch.Event(
            device=torch.device("neuron", _index(None)),
            enable_timing=enable_timing,
            blocking=blocking,
            interprocess=interprocess,
        )


def current_stream(device=None) -> Stream:
    return torch.accelerator.current_stream(_index(device))


def default_stream(device=None) -> Stream:
    idx = _index(device)
    return Stream(stream_id=0, device_index=idx, device_type=_privateuse1_type())


def _privateuse1_type() -> int:
    # DeviceType enum value of PrivateUse1, as torch.Stream's constructor expects.
    return torch.Stream(device=torch.device("neuron", 0)).device_type


def set_stream(stream: torch.Stream) -> None:
    if stream is not None:
        torch.accelerator.set_stream(stream)


@contextlib.contextmanager
def stream(s: torch.Stream | None):
    """Make ``s`` the current stream of its device for the duration of the block."""
    if s is None:
        yield
        return
    prev = torch.accelerator.current_stream(s.device_index)
    torch.accelerator.set_stream(s)
    try:
        yield
    finally:
        torch.accelerator.set_stream(prev)


class StreamContext:
    def __init__(self, s):
        self._cm = stream(s)

    def __enter__(self):
        return self._cm.__enter__()

    def __exit__(self, *exc):
        return self._cm.__exit__(*exc)
