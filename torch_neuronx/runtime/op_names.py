"""Op names, written one way: the driver's.

The C++ driver names an ATen op it dispatches ``"<namespace>::<name>"`` for the default
overload and ``"<namespace>::<name>.<overload>"`` otherwise (``"aten::mm"``,
``"aten::add.Tensor"``, csrc/eager/kernel.cpp). Every layer that names an op -- the op policy,
the performance model's costs, compiled-graph plans and legality, the profiler's events,
``torch_neuronx.evaluate`` -- uses these functions, so a name from any of them finds the
others' entries.
"""

from __future__ import annotations

__all__ = ["op_name", "strip_overload", "split", "base_name"]


def op_name(op) -> str:
    """The driver's name of an ``OpOverload`` ("aten::mm", "aten::add.Tensor"); the qualified
    name of an ``OpOverloadPacket`` ("aten::add"); ``__name__`` (else ``str``) of any other
    callable (an FX graph's Python targets, e.g. ``operator.getitem``)."""
    import torch

    if isinstance(op, torch._ops.OpOverload):
        return op.name()  # the schema's name, plus "." and the overload unless it is default
    if isinstance(op, torch._ops.OpOverloadPacket):
        return op._qualified_op_name
    return getattr(op, "__name__", str(op))


def strip_overload(name: str) -> str:
    """The op of an op name, without its overload: "aten::add.Tensor" -> "aten::add"."""
    return name.split(".", 1)[0]


def split(name: str) -> tuple[str, str, str]:
    """(namespace, name, overload) of an op name: "aten::add_.Tensor" -> ("aten", "add_",
    "Tensor"), "aten::mm" -> ("aten", "mm", ""); also PyTorch's ``str()`` of an overload,
    "aten.mm.default" -> ("aten", "mm", "default"). No namespace: ("", name, overload)."""
    ns, sep, rest = name.partition("::")
    if not sep:
        ns, rest = "", name
        if name.startswith("aten."):
            ns, rest = "aten", name[5:]
    base, _, overload = rest.partition(".")
    return ns, base, overload


def base_name(name: str) -> str:
    """The op's name alone: "aten::add_.Tensor" -> "add_", "aten.mm.default" -> "mm"."""
    return split(name)[1]
