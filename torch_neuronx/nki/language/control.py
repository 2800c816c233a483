"""Iteration, SPMD identity and debugging: ``affine_range`` / ``sequential_range`` /
``static_range`` (Python ranges: the kernel is unrolled, as NKI's compiler unrolls it),
``program_id`` / ``num_programs`` / ``program_ndim``, ``device_print``, ``no_reorder``."""

from __future__ import annotations

import contextlib
import math

from .. import dtypes, execution
from ..errors import NkiUnsupportedError, fail


def _range(start, stop, step):
    if stop is None:
        start, stop = 0, start
    for v in (start, stop, step):
        if not isinstance(v, int):
            fail(
                f"loop bounds must be compile-time integers, got {v!r} (dynamic bounds in "
                f"registers are not simulated)"
            )
    return range(start, stop, step)


def affine_range(start, stop=None, step=1):
    """Iterations without loop-carried dependencies (the compiler may reorder/pipeline)."""
    return _range(start, stop, step)


def sequential_range(start, stop=None, step=1):
    """Iterations with loop-carried dependencies (run in order)."""
    return _range(start, stop, step)


def static_range(start, stop=None, step=1):
    """Fully unrolled iterations."""
    return _range(start, stop, step)


def dynamic_range(start, stop=None, step=1):
    """An on-device loop; with integer bounds the simulator runs it like ``range``."""
    return _range(start, stop, step)


def fori_loop(lower, upper, body_fun, step=1):
    for i in _range(lower, upper, step):
        body_fun(i)


def while_loop(init, body_fun):
    raise NkiUnsupportedError(
        "nl.while_loop needs device registers (dynamic control flow), which are not simulated"
    )


while_loop.not_simulated = True  # read by the generated coverage table


def program_id(axis=0) -> int:
    """Index of the running SPMD program along ``axis`` of the launch grid."""
    ex = execution.current()
    axis = int(axis)
    if not ex.grid:
        if axis == 0:
            return 0
        fail(f"nl.program_id({axis}): the kernel was launched without a grid")
    if not 0 <= axis < len(ex.grid):
        fail(f"nl.program_id({axis}): the launch grid {ex.grid} has {len(ex.grid)} axes")
    return ex.program_ids[axis]


def num_programs(axes=None) -> int:
    """Number of SPMD programs along ``axes`` (all programs when ``axes`` is None)."""
    ex = execution.current()
    grid = ex.grid or (1,)
    if axes is None:
        return math.prod(grid)
    if isinstance(axes, int):
        if not 0 <= axes < len(grid):
            fail(f"nl.num_programs({axes}): the launch grid {ex.grid or '()'} has {len(grid)} axes")
        return grid[axes]
    return math.prod(grid[a] for a in axes)


def program_ndim() -> int:
    return len(execution.current().grid)


def device_print(print_prefix, tensor):
    """Print ``print_prefix`` and the tile's values now (CPU simulation prints immediately)."""
    ex = execution.begin("device_print")
    from ..isa_common import DMA_OK, ON_CHIP, operand, record_dma

    operand(ex, "device_print", "tensor", tensor, ON_CHIP + DMA_OK)
    record_dma(ex, tensor.size * dtypes.itemsize(tensor.dtype))
    if ex.compute:
        v = tensor.read()
        ids = f" [program {ex.program_ids}]" if ex.grid else ""
        shown = v if v.dtype.is_floating_point else v.float()
        print(f"{print_prefix}{ids} {shown}", flush=True)


@contextlib.contextmanager
def no_reorder():
    """Keep program order in this block (the simulator always executes in program order)."""
    yield
