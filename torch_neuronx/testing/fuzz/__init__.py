"""Differential fuzzing: random tensor programs run on neuron and on CPU must agree.

A seeded generator writes small Python programs (a list of statements over named tensors): input
creation, views, transposes, slicing, in-place updates through views, reductions, indexing and
index_put, dtype conversions, broadcasting elementwise ops, ``out=`` arguments, and a few
statements that must raise. Each statement is tried on CPU while the program is generated, so
the program is valid where it means to be (a statement that raises on CPU is kept only
sometimes: neuron must then raise the same exception type).

Each program then runs from scratch on CPU and on neuron; the check requires, for every tensor
left in the program's namespace:

- the same dtype, shape, strides and storage offset;
- the same aliasing (two names share storage on neuron exactly when they do on CPU: a view op
  that copied, or an in-place update that did not reach the base, shows up here);
- the same values, **exactly** (bitwise: NaN equal to NaN, -0.0 unequal to 0.0): kernels run
  CPU's own code on device memory. The one stated exception is data produced by float64/complex128 arithmetic, which
  TorchNeuron runs in float32 by policy (docs/eager.md): such tensors are compared with a
  float32-level tolerance (``APPROX_RTOL``/``APPROX_ATOL``, scaled by the tensor's magnitude).
  The generator tracks which storages hold such data and never turns it into integers, masks,
  indices or comparisons, where a float32-sized difference could change a discrete result; an
  integer view of such a storage is compared on metadata only.
- the same outcome of every statement (both succeed, or both raise the same exception type).

A failing program is shrunk (statements are dropped while the program still fails) and printed
as a self-contained Python reproducer. ``run(seeds)`` returns a ``Report`` with what the run
covered (programs, statements, statements per kind, failures). Open bugs the fuzzer finds are
``KNOWN_BUGS`` (each with its reproducer); ``known_bug(failure)`` says which one explains a
failure. From the command line: ``python -m torch_neuronx.testing.fuzz --programs 1000``.

Modules: ``program`` (statements, programs, failures, reports), ``generation`` (the seeded
program generator), ``execution`` (running on CPU and the device, comparing), ``shrinking``
(smaller failing programs, reproducers), ``known_bugs``, ``runner`` (``run`` and the command
line).
"""

from __future__ import annotations

from .execution import _compare_values, check, compare  # noqa: F401 - importable from here
from .generation import generate
from .known_bugs import KNOWN_BUGS, KnownBug, known_bug
from .program import APPROX_ATOL, APPROX_RTOL, KINDS, Failure, Program, Report, Statement  # noqa: F401 - importable from here
from .runner import main, run  # noqa: F401 - importable from here
from .shrinking import reproducer, shrink

__all__ = [
    "KNOWN_BUGS",
    "Failure",
    "KnownBug",
    "Program",
    "Report",
    "Statement",
    "check",
    "compare",
    "generate",
    "known_bug",
    "reproducer",
    "run",
    "shrink",
]
