"""PyTorch features TorchNeuron does not support, reported honestly.

torch.func transforms and torch.distributions over neuron tensors compute correct results on the
emulated core, but TorchNeuron does not support them: warn once per feature and process, and
raise under TORCH_NEURONX_STRICT=1. (torch.func is detected in the driver, csrc/kernel.cpp, from
functorch's dispatch keys; torch.distributions here, when a distribution is built.)
"""
from __future__ import annotations

import warnings

import torch

from torch_neuronx import _C

_warned: set[str] = set()


def report(feature: str, advice: str) -> None:
    msg = (f"{feature} over neuron tensors is not supported by TorchNeuron; the emulated core "
           f"computes it correctly, but real Trainium may not. {advice}")
    if _C._strict():
        raise RuntimeError(msg + " (TORCH_NEURONX_STRICT=1 makes this an error)")
    if feature not in _warned:
        _warned.add(feature)
        warnings.warn(msg, UserWarning, stacklevel=3)


def _on_neuron(obj) -> bool:
    return any(isinstance(v, torch.Tensor) and v.device.type == "neuron" for v in vars(obj).values())


_orig_dist_init = torch.distributions.Distribution.__init__


def _dist_init(self, *args, **kwargs):
    _orig_dist_init(self, *args, **kwargs)
    if _on_neuron(self):
        report("torch.distributions", "Sample on CPU and move the samples, or write the sampling "
               "with plain tensor ops (torch.randn, torch.rand).")


_TRANSFORMS = ("grad", "grad_and_value", "vmap", "vjp", "jvp", "jacrev", "jacfwd", "hessian",
               "linearize")


def _has_neuron(tree) -> bool:
    leaves = torch.utils._pytree.tree_leaves(tree)
    return any(isinstance(t, torch.Tensor) and t.device.type == "neuron" for t in leaves)


def _wrap_transform(name, transform):
    import functools

    @functools.wraps(transform)
    def wrapped_transform(func, *targs, **tkwargs):
        # vjp/jvp/linearize take the primals directly; the others return a function.
        if name in ("vjp", "jvp", "linearize"):
            if _has_neuron((targs, tkwargs)):
                report("torch.func transforms", "Use plain autograd (loss.backward()) or run the "
                       "transform on CPU tensors.")
            return transform(func, *targs, **tkwargs)
        inner = transform(func, *targs, **tkwargs)

        @functools.wraps(inner)
        def call(*args, **kwargs):
            if _has_neuron((args, kwargs)):
                report("torch.func transforms", "Use plain autograd (loss.backward()) or run the "
                       "transform on CPU tensors.")
            return inner(*args, **kwargs)

        return call

    wrapped_transform._neuron_wrapped = True
    return wrapped_transform


_NESTED_FACTORIES = ("nested_tensor", "as_nested_tensor", "nested_tensor_from_jagged", "narrow",
                     "to_padded_tensor")


def _nested_error():
    return NotImplementedError(
        "Nested tensors (torch.nested) are not supported on the neuron device. Pad the "
        "sequences into a dense tensor (torch.nn.utils.rnn.pad_sequence) or keep nested "
        "tensors on CPU.")


def _wrap_nested(fn):
    import functools

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        dev = kwargs.get("device")
        if dev is not None and torch.device(dev).type == "neuron":
            raise _nested_error()
        out = fn(*args, **kwargs)
        if isinstance(out, torch.Tensor) and out.is_nested and out.device.type == "neuron":
            raise _nested_error()
        return out

    wrapped._neuron_wrapped = True
    return wrapped


def install() -> None:
    for name in _NESTED_FACTORIES:
        fn = getattr(torch.nested, name, None)
        if fn is not None and not getattr(fn, "_neuron_wrapped", False):
            setattr(torch.nested, name, _wrap_nested(fn))
    if torch.distributions.Distribution.__init__ is not _dist_init:
        torch.distributions.Distribution.__init__ = _dist_init
    import importlib

    func = importlib.import_module("torch.func")
    for name in _TRANSFORMS:
        fn = getattr(func, name, None)
        if fn is not None and not getattr(fn, "_neuron_wrapped", False):
            setattr(func, name, _wrap_transform(name, fn))
    torch.vmap = func.vmap
