"""PyTorch features TorchNeuron does not support, reported honestly.

torch.func transforms and torch.distributions over neuron tensors compute correct results on the
emulated core, but TorchNeuron does not support them: warn once per feature and process, and
raise under TORCH_NEURONX_STRICT=1. Both are detected here: a torch.func transform when it is
called with a neuron tensor, a distribution when it is built over one. Nested tensors on neuron
are a clear error. The wrapped torch attributes are listed in runtime/patches.py; the checks
cost a CPU-only program next to nothing (benchmarks/bench_cpu_only.py).
"""

from __future__ import annotations

import functools
import importlib
import warnings

import torch

from torch_neuronx import _C
from torch_neuronx.runtime import patches
from torch_neuronx.runtime.devices import is_initialized

_warned: set[str] = set()


def report(feature: str, advice: str) -> None:
    msg = (
        f"{feature} over neuron tensors is not supported by TorchNeuron; the emulated core "
        f"computes it correctly, but real Trainium may not. {advice}"
    )
    if _C._strict():
        raise RuntimeError(msg + " (TORCH_NEURONX_STRICT=1 makes this an error)")
    if feature not in _warned:
        _warned.add(feature)
        warnings.warn(msg, UserWarning, stacklevel=3)


def _neuron_tensors_may_exist() -> bool:
    """False while no neuron tensor can exist yet: the driver initialises the device at its
    first allocation. This keeps the checks below off a CPU-only program's path. (Under
    Dynamo tracing the checks run as written: they are plain Python that Dynamo can trace.)"""
    return torch.compiler.is_compiling() or is_initialized()


def _is_neuron(x) -> bool:
    # is_cpu first: a plain attribute read, so CPU tensors never build a torch.device
    return isinstance(x, torch.Tensor) and not x.is_cpu and x.device.type == "neuron"


def _any_neuron(values) -> bool:
    """True if a neuron tensor is among ``values`` or inside one of them (any pytree)."""
    for v in values:
        if isinstance(v, torch.Tensor):
            if _is_neuron(v):
                return True
        elif not isinstance(v, (bool, int, float, str, type(None))):
            if any(_is_neuron(t) for t in torch.utils._pytree.tree_leaves(v)):
                return True
    return False


_orig_dist_init = torch.distributions.Distribution.__init__


def _dist_init(self, *args, **kwargs):
    _orig_dist_init(self, *args, **kwargs)
    if _neuron_tensors_may_exist() and any(_is_neuron(v) for v in vars(self).values()):
        report(
            "torch.distributions",
            "Sample on CPU and move the samples, or write the sampling "
            "with plain tensor ops (torch.randn, torch.rand).",
        )


_TRANSFORMS = (
    "grad",
    "grad_and_value",
    "vmap",
    "vjp",
    "jvp",
    "jacrev",
    "jacfwd",
    "hessian",
    "linearize",
)


def _wrap_transform(name, transform):
    @functools.wraps(transform)
    def wrapped_transform(func, *targs, **tkwargs):
        # vjp/jvp/linearize take the primals directly; the others return a function.
        if name in ("vjp", "jvp", "linearize"):
            if _neuron_tensors_may_exist() and _any_neuron((*targs, *tkwargs.values())):
                report(
                    "torch.func transforms",
                    "Use plain autograd (loss.backward()) or run the transform on CPU tensors.",
                )
            return transform(func, *targs, **tkwargs)
        inner = transform(func, *targs, **tkwargs)

        @functools.wraps(inner)
        def call(*args, **kwargs):
            if _neuron_tensors_may_exist() and _any_neuron((*args, *kwargs.values())):
                report(
                    "torch.func transforms",
                    "Use plain autograd (loss.backward()) or run the transform on CPU tensors.",
                )
            return inner(*args, **kwargs)

        return call

    return wrapped_transform


_NESTED_FACTORIES = (
    "nested_tensor",
    "as_nested_tensor",
    "nested_tensor_from_jagged",
    "narrow",
    "to_padded_tensor",
)


def _nested_error():
    return NotImplementedError(
        "Nested tensors (torch.nested) are not supported on the neuron device. Pad the "
        "sequences into a dense tensor (torch.nn.utils.rnn.pad_sequence) or keep nested "
        "tensors on CPU."
    )


def _wrap_nested(fn):
    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        dev = kwargs.get("device")
        if dev is not None and torch.device(dev).type == "neuron":
            raise _nested_error()
        out = fn(*args, **kwargs)
        if isinstance(out, torch.Tensor) and out.is_nested and _is_neuron(out):
            raise _nested_error()
        return out

    return wrapped


def install() -> None:
    for name in _NESTED_FACTORIES:
        fn = getattr(torch.nested, name, None)
        if fn is not None:
            patches.replace(
                torch.nested,
                name,
                _wrap_nested(fn),
                reason="nested tensors on neuron: raise a clear error naming the "
                "alternative (padding) instead of failing inside an op",
            )
    patches.replace(
        torch.distributions.Distribution,
        "__init__",
        _dist_init,
        reason="warn (or raise under TORCH_NEURONX_STRICT=1) that torch.distributions "
        "over neuron tensors is not supported by TorchNeuron",
    )
    func = importlib.import_module("torch.func")
    for name in _TRANSFORMS:
        patches.replace(
            func,
            name,
            _wrap_transform(name, getattr(func, name)),
            reason="warn (or raise under TORCH_NEURONX_STRICT=1) that torch.func "
            "transforms over neuron tensors are not supported by TorchNeuron",
        )
    patches.replace(torch, "vmap", func.vmap, reason="the same wrapper as torch.func.vmap")
