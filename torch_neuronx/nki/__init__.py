"""NKI (Neuron Kernel Interface) on the emulated NeuronCore.

A kernel written for AWS's ``nki`` package runs here with an import change::

    from torch_neuronx import nki
    import torch_neuronx.nki.language as nl
    import torch_neuronx.nki.isa as nisa

``@nki.jit`` kernels are simulated instruction by instruction (vectorised torch ops on whole
tiles) on neuron tensors, with the NeuronCore's rules checked (partition and tile limits,
PSUM banks, SBUF/PSUM capacity of live tiles, dtype rules, bounds, read-only inputs) and
their cost counted. ``nki_op`` makes a kernel a PyTorch custom op (eager, autograd,
``torch.compile``). See docs/nki.md.
"""

from __future__ import annotations

from . import collectives, isa, language, typing
from .errors import (
    NkiCapacityError,
    NkiError,
    NkiMutationError,
    NkiUnsupportedError,
    NkiValidationError,
)
from .kernel import Kernel, KernelReport, jit, last_report, simulate
from .launch_tools import baremetal, benchmark, profile
from .ranks import run_ranks
from .torch_op import nki_op

__all__ = [
    "jit",
    "simulate",
    "Kernel",
    "KernelReport",
    "last_report",
    "language",
    "isa",
    "typing",
    "collectives",
    "run_ranks",
    "baremetal",
    "benchmark",
    "profile",
    "nki_op",
    "NkiError",
    "NkiValidationError",
    "NkiCapacityError",
    "NkiMutationError",
    "NkiUnsupportedError",
]
