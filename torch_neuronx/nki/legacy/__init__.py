"""The pre-0.2 NKI language (``neuronxcc.nki``), in which most published kernels are written.

A kernel written for ``neuronxcc.nki`` runs with its import lines pointed here::

    import torch_neuronx.nki.legacy as nki
    import torch_neuronx.nki.legacy.language as nl
    import torch_neuronx.nki.legacy.isa as nisa

or unchanged after one call that makes ``neuronxcc.nki`` name this package (only when no
real ``neuronxcc`` is importable)::

    import torch_neuronx.nki.legacy
    torch_neuronx.nki.legacy.install_as_neuronxcc()
    import neuronxcc.nki as nki          # the old kernels' own imports

What the old language has (block dims and ``nl.par_dim``, value-returning ISA calls with
``mask=``/``dtype=``, NumPy dtypes and functions, reductions over any free axes) runs with
its old meaning on the same simulated instructions as NKI 0.2+; what is not simulated
raises an error naming the construct, the kernel line and the 0.2+ replacement. See
docs/nki.md ("The pre-0.2 language").
"""

from __future__ import annotations

import functools
import importlib.util
import sys

from .. import launch_tools, running, typing
from ..errors import (  # noqa: F401
    NkiError,
    NkiUnsupportedError,
    NkiValidationError,
)
from ..kernel import Kernel, last_report
from ..torch_op import nki_op  # noqa: F401
from . import compiler, isa, language

__all__ = [
    "jit",
    "simulate_kernel",
    "baremetal",
    "benchmark",
    "profile",
    "install_as_neuronxcc",
    "language",
    "isa",
    "compiler",
    "typing",
    "last_report",
]


class LegacyKernel(Kernel):
    """An ``@nki.jit`` kernel of the old language: NumPy dtypes and operators are translated
    while it runs (a 0.2+ kernel gets an error naming the replacement)."""

    def _launch(self, grid, args, kwargs):
        before = getattr(running.slot, "legacy", False)
        running.slot.legacy = True
        try:
            return super()._launch(grid, args, kwargs)
        finally:
            running.slot.legacy = before


def jit(fn=None, mode: str = "auto", **kwargs):
    """``@nki.jit`` / ``@nki.jit(mode='trace')`` of ``neuronxcc.nki``: every mode is simulated."""
    if fn is None:
        return lambda f: LegacyKernel(f, mode=mode, **kwargs)
    return LegacyKernel(fn, mode=mode, **kwargs)


trace = jit

# the standalone launch decorators, with this language's jit for plain functions
baremetal = functools.partial(launch_tools.baremetal, _jit=jit)
benchmark = functools.partial(launch_tools.benchmark, _jit=jit)
profile = functools.partial(launch_tools.profile, _jit=jit)


def simulate_kernel(kernel, *args, **kwargs):
    """``nki.simulate_kernel(kernel[grid], *args)`` of ``neuronxcc.nki``: launch the kernel."""
    if not isinstance(kernel, Kernel) and not hasattr(kernel, "kernel"):
        kernel = jit(kernel)
    return kernel(*args, **kwargs)


def install_as_neuronxcc() -> None:
    """Make ``import neuronxcc.nki[.language|.isa]`` name this package, so that old kernels run
    with their imports unchanged. Does nothing when a real ``neuronxcc`` is importable (AWS's
    compiler package is not shadowed)."""
    if "neuronxcc" not in sys.modules and importlib.util.find_spec("neuronxcc") is not None:
        return
    import types

    top = sys.modules.get("neuronxcc") or types.ModuleType("neuronxcc")
    me = sys.modules[__name__]
    top.nki = me
    sys.modules["neuronxcc"] = top
    sys.modules["neuronxcc.nki"] = me
    sys.modules["neuronxcc.nki.language"] = language
    sys.modules["neuronxcc.nki.isa"] = isa
    sys.modules["neuronxcc.nki.compiler"] = compiler
    # annotations only (`import neuronxcc.nki.typing as nt`, `nt.tensor[shape, dtype]`)
    sys.modules["neuronxcc.nki.typing"] = typing
