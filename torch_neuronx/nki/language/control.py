"""Iteration, SPMD identity and debugging: ``affine_range`` / ``sequential_range`` /
``static_range`` (Python ranges: the kernel is unrolled, as NKI's compiler unrolls it),
``program_id`` / ``num_programs`` / ``program_ndim``, ``device_print``, ``no_reorder``."""

from __future__ import annotations

import contextlib
import math
import numbers

from .. import dtypes, execution
from ..errors import fail

_MAX_DYNAMIC_ITERATIONS = 10_000_000  # a while_loop past this is reported as not ending


def _dynamic(v, what):
    """A register bound's value (None: unknown in a shapes-only run)."""
    from ..isa.registers import VirtualRegister

    if isinstance(v, VirtualRegister):
        return v.get(what)
    return v


def _range(start, stop, step, registers=False):
    if stop is None:
        start, stop = 0, start
    if registers:
        vals = [_dynamic(v, "nl.dynamic_range: a register bound") for v in (start, stop, step)]
        if None in vals:  # shapes only: the bound is data; run the body once
            return range(1)
        start, stop, step = vals
    # NumPy integers (a bound computed with NumPy) are compile-time integers too
    start, stop, step = (
        int(v) if isinstance(v, numbers.Integral) else v for v in (start, stop, step)
    )
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
    """An on-device loop; bounds are integers or registers (``nisa.register_alloc``), whose
    values at the loop's start are read, as the engine sequencers read them."""
    return _range(start, stop, step, registers=True)


def fori_loop(lower, upper, body_fun, step=1, unroll=False):
    for i in _range(lower, upper, step, registers=True):
        body_fun(i)


def while_loop(init, body_fun):
    """``r = init; while r != 0: r = body_fun(r)``: the condition register is checked before
    each iteration; the body receives a copy of it and returns the next condition register
    (AWS page: nki.language.while_loop). In a shapes-only run a condition loaded from memory
    is unknown: the body runs once."""
    from ..isa.registers import VirtualRegister

    if not isinstance(init, VirtualRegister):
        fail(f"nl.while_loop: init must be a register (nisa.register_alloc), got {init!r}")
    r = init
    n = 0
    while True:
        v = r.get("nl.while_loop: the condition register")
        if v is None:  # shapes only
            if n:
                return None
        elif v == 0:
            return None
        n += 1
        if n > _MAX_DYNAMIC_ITERATIONS:
            fail(
                f"nl.while_loop ran {_MAX_DYNAMIC_ITERATIONS} iterations without its condition "
                f"register becoming 0; the kernel's loop does not end"
            )
        copy = VirtualRegister(v)
        copy.loaded = r.loaded
        r = body_fun(copy)
        if not isinstance(r, VirtualRegister):
            fail(
                f"nl.while_loop: body_fun must return the next condition register, got "
                f"{type(r).__name__} ({r!r})"
            )


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
