"""Which Python call read a device tensor on the host: the kind of each host sync, observed.

While an evaluation runs, the ``torch.Tensor`` methods through which Python code reads device
values are wrapped (the class attributes are replaced through ``runtime.patches.scoped``,
listed by ``patches.installed()`` meanwhile, and restored when the last evaluation ends):
``.item()``, ``float()`` / ``int()`` / ``complex()``, ``bool()`` (an ``if`` or ``while`` on a
tensor), ``.tolist()``, ``.cpu()``, ``.to("cpu")`` and printing (``repr`` /
``str`` / ``format``, which ``print``, f-strings and logging call). A wrapper that sees a plain
neuron tensor reports the read with its kind and the user's call site, then runs the real
method; reads nested inside it (printing calls ``.tolist()``) are the same read. (``.numpy()``
of a device tensor is an error in PyTorch, as on CUDA, not a read.) Device-to-host transfers
outside these methods (``copy_`` into a host tensor, a scalar read inside a torch function)
are still seen as the performance model's ``device_to_host`` copy events and named after the
op that made them (collector.py).

Only plain ``torch.Tensor`` / ``Parameter`` objects count: fake tensors (compilation,
``--fake``) and reads while Dynamo traces are not reads of device values."""

from __future__ import annotations

import contextlib
import threading

import torch

from torch_neuronx.runtime import patches

from .callsite import user_site
from .untraced import untraced

#: Tensor attribute -> the kind of read it is
KINDS = {
    "item": ".item()",
    "__float__": "float(tensor)",
    "__int__": "int(tensor)",
    "__index__": "int(tensor)",
    "__complex__": "float(tensor)",
    "__bool__": "bool(tensor)",
    "tolist": ".tolist()",
    "cpu": ".cpu()",
    "to": '.to("cpu")',
    "__repr__": "printing",
    "__format__": "printing",
}
_PLAIN = (torch.Tensor, torch.nn.Parameter)
_state = threading.local()  # .depth: inside a wrapped read on this thread
_sinks: list = []  # callables (kind, site) of the active evaluations (innermost last)
_scope = contextlib.ExitStack()  # the scoped patches while any evaluation watches
_lock = threading.Lock()


def _to_host(args, kwargs) -> bool:
    """True when ``Tensor.to(*args, **kwargs)`` targets the CPU."""
    try:
        device = torch._C._nn._parse_to(*args, **kwargs)[0]
    except Exception:  # the real .to will raise its own error
        return False
    return device is not None and device.type == "cpu"


def compiling() -> bool:
    """True while Dynamo, AOTAutograd or Inductor compile a graph. Their reads of device values
    (Inductor's constant folding calls ``.item()`` on the constants it folds, on a cold compile)
    are paid once per compilation, not in every step: the report lists them apart from the
    steady-state host syncs (issue 25: they were counted as the step's)."""
    return torch.compiler.is_compiling()


def in_read() -> bool:
    """True inside a wrapped read on this thread (its transfers are that read)."""
    return getattr(_state, "depth", 0) > 0


def _wrap(name: str, kind: str, original):
    def read(self, *args, **kwargs):
        if (
            getattr(_state, "depth", 0)
            or self.is_cpu  # a plain attribute read: host tensors never build a torch.device
            or type(self) not in _PLAIN
            or self.device.type != "neuron"
            or (name == "to" and not _to_host(args, kwargs))
            or torch.compiler.is_compiling()
        ):
            return original(self, *args, **kwargs)
        sinks = _sinks
        if sinks:
            sinks[-1](kind, user_site(2))
        _state.depth = 1
        try:
            return original(self, *args, **kwargs)
        finally:
            _state.depth = 0

    read.__name__ = getattr(original, "__name__", name)
    read.__qualname__ = f"Tensor.{name}"
    read.__doc__ = getattr(original, "__doc__", None)
    # run outside Dynamo: the eager remainder of a compiled function (after a graph break)
    # calls these, and Dynamo would otherwise trace the wrapper as if it were user code
    return untraced(read, reason="torch-neuronx evaluate: host-read watch")


def watch(sink) -> None:
    """Starts reporting reads to ``sink(kind, site)`` (installs the wrappers if needed)."""
    with _lock:
        if not _sinks:
            for name, kind in KINDS.items():
                wrapper = _wrap(name, kind, getattr(torch.Tensor, name))
                _scope.enter_context(
                    patches.scoped(
                        torch.Tensor,
                        name,
                        wrapper,
                        reason=f"torch_neuronx.evaluate: reports each {kind} of a neuron "
                        "tensor with its call site (host reads, for the report)",
                    )
                )
        _sinks.append(sink)


def unwatch(sink) -> None:
    """Stops reporting to ``sink``; the last one restores the original methods."""
    with _lock:
        if sink in _sinks:
            _sinks.remove(sink)
        if not _sinks:
            _scope.close()
