"""``nki_op``: an NKI kernel as a PyTorch custom operator (TorchNeuron's API).

::

    @nki.jit
    def add_kernel(a, b): ...                       # returns an nl.shared_hbm tensor

    @nki_op("mylib::add", mutates_args={})
    def add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return add_kernel(a, b)

    add.register_autograd(backward, setup_context=setup)   # training

The decorated function becomes a ``torch.library`` custom op (schema from its type hints).
Its kernel is registered for the CPU dispatch key and reached through the emulated core's
eager path: neuron tensors arrive as host aliases of device memory, outputs are allocated in
the device's pool and adopted without a copy, and the op is recorded as native
(``torch_neuronx.get_executed_ops()``). Its fake implementation is the same function run on
fake tensors, which runs the kernel in shapes-only mode (every hardware rule is checked at
trace time), so ``torch.compile(backend="neuron")`` keeps the op as one graph node.

Inputs not named in ``mutates_args`` are read-only: a kernel that writes one is an error.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Iterable

import torch

from . import dtypes
from ._device import current_route
from .errors import NkiValidationError
from .kernel import readonly_inputs


def _bound(sig, args, kwargs) -> dict:
    b = sig.bind(*args, **kwargs)
    b.apply_defaults()
    return b.arguments


def _tensors_of(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            if isinstance(v, torch.Tensor):
                yield v


class _NkiOpDef(torch._library.custom_ops.CustomOpDef):
    """torch's custom-op object, checking NKI dtypes on every call."""

    def __call__(self, *args, **kwargs):
        self._nki_check(args, kwargs)
        return super().__call__(*args, **kwargs)


def _self_costed(name: str) -> None:
    """The op's kernels record their own modeled cost (nki/cost.py): tell the performance
    model not to cost the op again from the eager path."""
    from torch_neuronx import perf

    perf.self_costed(name)


def nki_op(name: str, fn=None, *, mutates_args: str | Iterable[str], schema: str | None = None):
    """Register ``fn`` (a function calling NKI kernels) as the custom op ``name``
    ("namespace::op"). Returns torch's custom op object (call it; use
    ``.register_autograd(backward, setup_context=...)`` for training)."""

    def register(f):
        sig = inspect.signature(f)
        mutable = (
            set()
            if mutates_args == "unknown"
            else set([mutates_args] if isinstance(mutates_args, str) else mutates_args)
        )

        def check(arguments):
            for arg, value in arguments.items():
                for t in _tensors_of(value):
                    if t.dtype not in dtypes.SUPPORTED_TORCH:
                        raise NkiValidationError(
                            f"nki_op '{name}': argument '{arg}' is {t.dtype}; NKI kernels support "
                            f"bool, int8/16/32, uint8/16/32, float16, bfloat16, float32 and "
                            f"float8_e4m3fn/e5m2/e8m0fnu tensors"
                        )

        def readonly(arguments):
            tensors = {}
            for arg, value in arguments.items():
                if arg in mutable:
                    continue
                for i, t in enumerate(_tensors_of(value)):
                    tensors[arg if isinstance(value, torch.Tensor) else f"{arg}[{i}]"] = t
            return readonly_inputs(tensors, name)

        @functools.wraps(f)
        def device_kernel(*args, **kwargs):
            arguments = _bound(sig, args, kwargs)
            if current_route() < 0:  # not reached through the neuron device's eager/compiled path
                arg = next(
                    (a for a, v in arguments.items() if any(True for _ in _tensors_of(v))), "?"
                )
                raise NkiValidationError(
                    f"nki_op '{name}' runs NKI kernels on the NeuronCore, but it was called with "
                    f"CPU tensors (argument '{arg}'); move the inputs to the device with "
                    f".to('neuron')"
                )
            check(arguments)
            with readonly(arguments):
                return f(*args, **kwargs)

        op = torch.library.custom_op(
            name, device_kernel, mutates_args=mutates_args, device_types="cpu", schema=schema
        )

        @functools.wraps(f)
        def fake(*args, **kwargs):
            check(_bound(sig, args, kwargs))
            return f(*args, **kwargs)

        op.register_fake(fake)
        _self_costed(name)
        # check dtypes before dispatch too: the eager path would otherwise run float64 inputs
        # in float32 (TorchNeuron's float64 policy) before the kernel could see them
        op.__class__ = _NkiOpDef
        op._nki_check = lambda args, kwargs: check(_bound(sig, args, kwargs))
        return op

    if fn is not None:
        return register(fn)
    return register
