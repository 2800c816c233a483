"""Mapping a device onto another for a script that runs unmodified (evaluate's shared modes).

``MapDevice`` rewrites every device argument of one type (``neuron`` for ``--reference``,
``cuda`` for ``--fake``) into a target device; ``NeuronStream`` keeps the random ops of tensors
that would have lived on neuron on the neuron generator's stream. Its own module so that
``reference.py`` (the reference re-run) and ``fake.py`` (the fake trace) share it without
importing each other.
"""

from __future__ import annotations

import re

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

_NEURON = re.compile(r"^neuron(:\d+)?$")


def _tensors(x):
    if isinstance(x, torch.Tensor):
        yield x
    elif isinstance(x, (list, tuple)):
        for v in x:
            if isinstance(v, torch.Tensor):
                yield v


def _storage(t):
    """A tensor's storage (one Python object per storage: views, ``.data`` and ``detach()``
    share it, so a parameter initialised through ``param.data.normal_()`` is still tracked)."""
    try:
        return t.untyped_storage()
    except (RuntimeError, NotImplementedError):  # sparse and other storage-less layouts
        return None


def _in_neuron_stream(fn):
    """Runs ``fn`` with the CPU generator holding the neuron generator's state (the two share a
    format: the emulated device's generator is PyTorch's CPU one), then hands the advanced
    state back to the neuron generator."""
    cpu = torch.default_generator
    saved = cpu.get_state()
    cpu.set_state(torch.neuron.get_rng_state())
    try:
        return fn()
    finally:
        torch.neuron.set_rng_state(cpu.get_state())
        cpu.set_state(saved)


class NeuronStream(TorchDispatchMode):
    """Keeps the neuron device's random stream apart in the mapped run.

    In the instrumented run, random numbers drawn on neuron (weights initialised there,
    ``randn(device="neuron")``, dropout on device activations) come from the neuron
    generator, and those drawn on the host from the CPU generator. Mapped to the CPU, both
    would come from one stream and the runs would differ from the first draw. So the storages
    that would have lived on neuron are tracked (made by a mapped call, or computed from such
    tensors), and every random ATen op (``Tag.nondeterministic_seeded``) on them, or inside a
    mapped factory call, draws from the neuron generator's state."""

    def __init__(self):
        super().__init__()
        from torch.utils.weak import WeakIdKeyDictionary

        self.born = WeakIdKeyDictionary()
        self.mapping = 0  # > 0 inside a torch function whose device MapDevice mapped

    def mark(self, out) -> None:
        for t in _tensors(out):
            st = _storage(t)
            if st is not None:
                self.born[st] = True

    def _neuron(self, args, kwargs) -> bool:
        if self.mapping:
            return True
        for a in (*args, *kwargs.values()):
            for t in _tensors(a):
                st = _storage(t)
                if st is not None and st in self.born:
                    return True
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if not self._neuron(args, kwargs):
            return func(*args, **kwargs)
        if torch.Tag.nondeterministic_seeded in func.tags and kwargs.get("generator") is None:
            out = _in_neuron_stream(lambda: func(*args, **kwargs))
        else:
            out = func(*args, **kwargs)
        self.mark(out)
        return out


class MapDevice(TorchFunctionMode):
    """Every ``neuron`` device argument of a torch function becomes ``target``; with a
    :class:`NeuronStream`, the results are marked as the neuron tensors they stand for."""

    def __init__(self, target: str, stream: NeuronStream | None = None, source: str = "neuron"):
        super().__init__()
        self.target = torch.device(target)
        self.stream = stream
        self.source = source  # the device type mapped (--fake maps "cuda" onto "neuron")
        self.pattern = _NEURON if source == "neuron" else re.compile(rf"^{source}(:\d+)?$")
        self.sites: list = []  # call sites of mapped arguments (``record_sites``)
        self.record_sites = False
        from torch.utils._device import _device_constructors

        self.constructors = _device_constructors()

    def _map(self, v):
        if isinstance(v, torch.device):
            return self.target if v.type == self.source else v
        if isinstance(v, str) and self.pattern.match(v):
            return self.target
        return v

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.device:  # a device object is mapped where it is used, so that the
            return func(*args, **kwargs)  # script's torch.neuron calls still get neuron devices
        if func is getattr(torch.Tensor, "neuron", None):  # Tensor.neuron(): PyTorch's generated
            func, args, kwargs = torch.Tensor.to, (args[0], "neuron"), {}  # method's .to is
            # called inside it, beyond this mode's reach
        mapped_args = tuple(self._map(a) for a in args)
        mapped_kwargs = {k: self._map(v) for k, v in kwargs.items()}
        mapped = any(a is not b for a, b in zip(mapped_args, args)) or any(
            mapped_kwargs[k] is not kwargs[k] for k in kwargs
        )
        if (
            func in self.constructors
            and mapped_kwargs.get("device") is None
            and torch.get_default_device().type == self.source
        ):
            mapped_kwargs["device"] = self.target
            mapped = True
        if mapped and self.record_sites:
            from .callsite import user_site

            self.sites.append(user_site(2))
        if not mapped or self.stream is None:
            return func(*mapped_args, **mapped_kwargs)
        self.stream.mapping += 1
        try:
            out = func(*mapped_args, **mapped_kwargs)
        finally:
            self.stream.mapping -= 1
        self.stream.mark(out)  # .to("neuron") of a host tensor may return it unchanged
        return out
