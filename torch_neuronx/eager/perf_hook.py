"""Connects the driver's device work to the performance model (torch_neuronx.perf).

While the model is recording, the C++ driver (csrc/runtime/perf_hook.h) reports to
:func:`_on_op` each eager op run on the emulated core, each copy and each collective of the
neuron c10d backend; ``torch_neuronx.perf`` switches the C++ flag on and off through the setter
registered here. This layer supplies what the perf layer must not import: the engine each op
runs on, from the op policy table.

The driver holds one callback, this module's; other code that wants to see each op the driver
reports (the migration report, ``torch_neuronx.evaluate``) subscribes with
:func:`add_op_observer` / :func:`remove_op_observer` instead of replacing it, so observers
nest and the performance model keeps counting. Observers are called only while the model
records (the driver reports nothing otherwise), before the op's cost is recorded.
"""

from __future__ import annotations

import functools
import threading

from torch_neuronx import _C
from torch_neuronx.perf import clock, transfers
from torch_neuronx.runtime.engines import Engine
from torch_neuronx.runtime.op_names import strip_overload

from .op_policy import engine_for

#: ops whose work is a transfer between host and device (or between devices)
_COPIES = {"aten::_copy_from", "aten::_copy_from_and_resize", "aten::copy_", "aten::_to_copy"}


@functools.lru_cache(maxsize=4096)
def _engine(op_name: str):
    return engine_for(op_name)


def _first_tensor(values):
    import torch

    for v in values:
        if isinstance(v, torch.Tensor):
            return v
    return None


def _copy(device: int, op_name: str, args, outputs) -> None:
    import torch

    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    if op_name.startswith("aten::copy_"):  # copy_(self=destination, src)
        dst, src = (tensors + [None, None])[:2]
    elif op_name.startswith("aten::_to_copy"):  # _to_copy(self) -> new tensor
        src, dst = (tensors[0] if tensors else None), _first_tensor(outputs)
    else:  # _copy_from(self=source, dst)
        src, dst = (tensors + [None, None])[:2]
    if src is None or dst is None:
        return
    nbytes = dst.numel() * dst.element_size()
    s, d = src.device, dst.device
    if s.type == "cpu" and d.type != "cpu":
        perf_record.copy(d.index or 0, transfers.H2D, nbytes)
    elif s.type != "cpu" and d.type == "cpu":
        perf_record.copy(s.index or 0, transfers.D2H, nbytes)
    elif s.type != "cpu" and d.type != "cpu":
        same = (s.index or 0) == (d.index or 0)
        perf_record.copy(s.index or 0, transfers.D2D if same else transfers.PEER, nbytes)


perf_record = None  # torch_neuronx.perf.report, imported when first recording


def _collective(device: int, op_name: str, args) -> None:
    from torch_neuronx.perf.collectives import group_ranks

    nbytes, group_name, size, rank, peer = args
    ranks = group_ranks(group_name, size)
    name = op_name.split("::", 1)[1]
    if name in ("send", "recv") and peer >= 0:
        perf_record.collective(device, name, nbytes, [ranks[rank]], peer=ranks[peer])
    else:
        perf_record.collective(device, name, nbytes, ranks)


_observers: tuple = ()  # callables (op_name, device, args, outputs, host_ns, fallback)
_observers_lock = threading.Lock()  # replaced whole under it: _on_op reads it without one


def add_op_observer(fn) -> None:
    """Calls ``fn(op_name, device, args, outputs, host_ns, fallback)`` for each op the driver
    reports from now on (while the performance model records), before the op is costed."""
    global _observers
    with _observers_lock:
        _observers = (*_observers, fn)


def remove_op_observer(fn) -> None:
    """Stops calling ``fn`` (added by :func:`add_op_observer`; absent: nothing happens)."""
    global _observers
    with _observers_lock:
        obs = list(_observers)
        if fn in obs:
            obs.remove(fn)
        _observers = tuple(obs)


def _on_op(op_name: str, device: int, args, outputs, host_ns: int, fallback: bool) -> None:
    for fn in _observers:
        fn(op_name, device, args, outputs, host_ns, fallback)
    if not clock.recording():
        return
    global perf_record
    if perf_record is None:  # the model's code loads on first use, not at `import torch`
        from torch_neuronx.perf import report as perf_record
    if op_name.startswith("c10d::"):
        _collective(device, op_name, args)
        return
    name = strip_overload(op_name)
    if name in perf_record.SELF_COSTED:  # records its own cost (e.g. an NKI kernel)
        return
    if name in _COPIES:
        _copy(device, op_name, args, outputs)
    elif name == "aten::_local_scalar_dense":  # .item(): a device -> host read of one element
        t = _first_tensor(args)
        perf_record.copy(device, transfers.D2H, t.element_size() if t is not None else 4)
    elif _engine(op_name) == Engine.collective:
        return  # the c10d kernels underneath report the collective itself
    elif fallback or _engine(op_name) == Engine.host:
        perf_record.fallback_op(device, op_name, args, outputs, host_ns * 1e-9)
    else:
        perf_record.op(device, op_name, args, outputs, _engine(op_name))


def install() -> None:
    """Registers the callback and the flag setter with the driver."""
    _C._set_perf_callback(_on_op)
    clock.set_native_flag(_C._perf_set_enabled)
