"""``nki.jit``: a kernel object that runs its function on the emulated NeuronCore.

Calling a kernel (``kernel(args)``) or launching an SPMD grid (``kernel[2, 3](args)``; with a
single integer it is also NKI's LNC syntax, ``kernel[2]``) runs the kernel function once per
program, in program order, with its tensor arguments as HBM tensors:

- neuron tensors are used in place through their host aliases (no copies);
- inside the eager/compiled path of an ``nki_op`` the arguments already are host aliases of
  device memory, and HBM outputs are allocated in the device's pool;
- fake tensors (``torch.compile`` tracing, the op's fake implementation) run the kernel in
  shapes-only mode: every rule is checked, nothing is computed;
- CPU tensors are an error: NKI kernels run on the NeuronCore.

After each program the SBUF/PSUM capacity rules are checked over the tiles' live ranges.
Each launch leaves a :class:`KernelReport` (instruction counts per engine, DMA bytes,
modeled device time when the performance model is available) in ``kernel.last_report``
and ``torch_neuronx.nki.last_report()``.
"""

from __future__ import annotations

import functools
import itertools
import math
import threading
import time
from typing import Any

import torch

from . import capacity, cost, dtypes, execution, lockstep, schedule, target
from . import grid as grid_mod
from ._device import current_route, unrouted
from .errors import NkiError, NkiValidationError
from .storage import MemoryRegion, Storage
from .tensor import NkiTensor

_tls = threading.local()
_last = {"report": None}


def last_report():
    """The :class:`KernelReport` of the most recent kernel launch (any kernel), or None."""
    return _last["report"]


class readonly_inputs:
    """Used by ``nki_op``: HBM arguments overlapping these tensors may not be written."""

    def __init__(self, tensors: dict, op_name: str):
        self.ranges = []
        for arg, t in tensors.items():
            if isinstance(t, torch.Tensor) and not _is_fake(t) and t.numel():
                lo, hi = _byte_range(t)
                self.ranges.append((lo, hi, f"input '{arg}' of nki_op '{op_name}'"))

    def __enter__(self):
        self.prev = getattr(_tls, "readonly", ())
        _tls.readonly = tuple(self.prev) + tuple(self.ranges)
        return self

    def __exit__(self, *exc):
        _tls.readonly = self.prev
        return False


def _byte_range(t: torch.Tensor):
    isz = t.element_size()
    lo = t.data_ptr()
    span = sum((s - 1) * abs(st) for s, st in zip(t.shape, t.stride(), strict=False) if s > 0)
    return lo, lo + (span + 1) * isz


def _is_fake(t) -> bool:
    from torch._subclasses.fake_tensor import FakeTensor

    return isinstance(t, FakeTensor) or t.device.type == "meta"


class KernelReport:
    """What one launch did: instruction counts per engine, DMA traffic, Tensor Engine FLOPs,
    host wall time of the simulation and, when the performance model is available, the
    modeled duration on the profile's NeuronCore."""

    def __init__(
        self, name, grid, target_label, stats, host_seconds, modeled_seconds, modeled_busy
    ):
        self.name = name
        self.grid = grid
        self.target = target_label
        self.instructions = dict(stats.instructions)
        self.total_instructions = sum(stats.instructions.values())
        self.by_opcode = dict(stats.by_opcode)
        self.dma_bytes = stats.dma_bytes
        self.dma_transfers = stats.dma_transfers
        self.tensor_flops = stats.flops
        self.host_seconds = host_seconds
        self.modeled_seconds = modeled_seconds  # None until the performance model is present
        self.modeled_busy = modeled_busy  # {engine: seconds} or {}

    def as_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items()}

    def __repr__(self) -> str:
        eng = ", ".join(f"{k}={v}" for k, v in sorted(self.instructions.items()))
        t = (
            f", modeled={self.modeled_seconds * 1e6:.2f} us"
            if self.modeled_seconds is not None
            else ""
        )
        g = f"[{','.join(map(str, self.grid))}]" if self.grid else ""
        return (
            f"KernelReport({self.name}{g} on {self.target}: {self.total_instructions} "
            f"instructions ({eng}), dma={self.dma_bytes} B in {self.dma_transfers} transfers, "
            f"tensor={self.tensor_flops:.3g} FLOP, host={self.host_seconds * 1e3:.2f} ms{t})"
        )


_normalize_grid = grid_mod.normalize


class _Launch:
    def __init__(self, kernel: Kernel, grid: tuple):
        self.kernel = kernel
        self.grid = grid

    def __call__(self, *args, **kwargs):
        return self.kernel._launch(self.grid, args, kwargs)


class Kernel:
    """An ``@nki.jit`` kernel. Call it, or index it with a launch grid first."""

    def __init__(self, fn, **options):
        self.fn = fn
        self.options = options
        self.last_report: KernelReport | None = None
        functools.update_wrapper(self, fn)

    def __getitem__(self, grid) -> _Launch:
        return _Launch(self, _normalize_grid(grid))

    def __call__(self, *args, **kwargs):
        return self._launch((), args, kwargs)

    def __repr__(self) -> str:
        return f"<nki.jit kernel {self.fn.__qualname__}>"

    def with_schedule(self, edges) -> Kernel:
        """The kernel with scheduling edges ``[(after, before or [befores]), ...]`` between
        named instructions (``name=``), honoured on the modeled schedule (nki/schedule.py)."""
        return Kernel(self.fn, **{**self.options, "schedule": schedule.normalize(edges)})

    # ------------------------------------------------------------------ launch
    def _launch(self, grid: tuple, args, kwargs):
        if execution.current_or_none() is not None:
            if grid:
                raise NkiError(
                    f"kernel '{self.__name__}' launched with a grid from inside another "
                    f"kernel; sub-kernels are inlined function calls"
                )
            return self.fn(*args, **kwargs)  # NKI inlines calls to other kernels
        names = _arg_names(self.fn, args, kwargs)
        tensors = [(n, t) for n, t in _tensors(names, args, kwargs)]
        abstract = any(_is_fake(t) for _, t in tensors)
        ex = execution.Execution(self.__name__, target.current(), grid, abstract)
        ex.readonly = getattr(_tls, "readonly", ())
        if "schedule" in self.options:
            ex.schedule = schedule.State(self.options["schedule"])
        if abstract:
            ex.device = next(t.device for _, t in tensors if _is_fake(t))
        else:
            route = current_route()
            devs = {t.device for _, t in tensors}
            cpu = [n for n, t in tensors if t.device.type == "cpu"]
            neuron = [t.device for _, t in tensors if t.device.type not in ("cpu", "meta")]
            if cpu and route < 0:
                raise NkiValidationError(
                    f"NKI kernel '{self.__name__}': argument '{cpu[0]}' is a CPU tensor. NKI "
                    f"kernels run on the NeuronCore: pass neuron tensors (.to('neuron')), or "
                    f"register the kernel with torch_neuronx.nki_op"
                )
            if len({d for d in neuron}) > 1:
                raise NkiValidationError(
                    f"NKI kernel '{self.__name__}': tensor arguments are on several devices "
                    f"({sorted(str(d) for d in devs)}); a kernel runs on one NeuronCore"
                )
            ex.route = route
            if neuron:
                ex.device = neuron[0]
            elif route >= 0:
                ex.device = None
            else:
                ex.device = torch.device("neuron", torch.neuron.current_device())
        t0 = time.perf_counter()
        # tiles are small: one thread per instruction avoids thread-pool synchronisation, which
        # costs more than the math (and collapses under a loaded host)
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            converted = self._run(ex, grid, names, args, kwargs)
            schedule.finish(ex)
        finally:
            torch.set_num_threads(threads)
        host = time.perf_counter() - t0
        modeled, busy = cost.model(ex) if not abstract else (None, {})
        report = KernelReport(self.__name__, grid, ex.target.label, ex.stats, host, modeled, busy)
        if not abstract:
            self.last_report = report
            _last["report"] = report
            cost.charge(ex, report)
        return converted

    def _run(self, ex, grid, names, args, kwargs):
        with unrouted(), execution.activate(ex):
            wrapped_args, wrapped_kwargs = _wrap_all(ex, names, args, kwargs)
            result = None
            programs = list(itertools.product(*[range(g) for g in grid])) if grid else [()]
            if len(programs) == 2 and not ex.abstract and lockstep.uses_communication(self.fn):
                # (shapes-only runs stay on this thread: fake tensor mode is per thread, and
                # there are no values to exchange)
                # sendrecv / core_barrier: the pair's programs run as coroutines
                def start(i):
                    ex.begin_program(programs[i], grid.core(programs[i], i))

                pair = lockstep.Pair(ex)
                result = pair.run(programs, start, self.fn, wrapped_args, wrapped_kwargs)
                ex.fill_unwritten()
                return _unwrap(result)
            for i, ids in enumerate(programs):
                ex.begin_program(ids, grid.core(ids, i) if grid else i)
                out = self.fn(*wrapped_args, **wrapped_kwargs)
                capacity.check(ex)
                if i == 0:
                    result = out
            ex.fill_unwritten()
            return _unwrap(result)


def jit(fn=None, mode: str = "auto", **kwargs):
    """Decorate an NKI kernel function (``@nki.jit`` or ``@nki.jit(...)``)."""
    if fn is None:
        return lambda f: Kernel(f, mode=mode, **kwargs)
    return Kernel(fn, mode=mode, **kwargs)


def simulate(kernel):
    """``nki.simulate(kernel)``: every kernel here is simulated; returns a callable that
    launches ``kernel`` (a plain function is wrapped with ``jit`` first)."""
    if isinstance(kernel, _Launch):
        return kernel
    return kernel if isinstance(kernel, Kernel) else Kernel(kernel)


# ------------------------------------------------------------------ arguments
def _arg_names(fn, args, kwargs) -> list:
    try:
        params = _params(fn)
    except TypeError:  # an unhashable callable
        params = _params.__wrapped__(fn)
    names = []
    for i in range(len(args)):
        names.append(params[i] if i < len(params) else f"arg{i}")
    return names


@functools.lru_cache(maxsize=512)
def _params(fn) -> tuple:
    """The parameter names of a kernel function (asked at every launch: cached)."""
    import inspect

    try:
        return tuple(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return ()


def _tensors(names, args, kwargs):
    for n, a in list(zip(names, args, strict=False)) + list(kwargs.items()):
        if isinstance(a, torch.Tensor):
            yield n, a
        elif isinstance(a, (list, tuple)):
            for j, x in enumerate(a):
                if isinstance(x, torch.Tensor):
                    yield f"{n}[{j}]", x


def _wrap_all(ex, names, args, kwargs):
    def wrap(n, a):
        if isinstance(a, torch.Tensor):
            return _wrap(ex, a, n)
        if isinstance(a, (list, tuple)) and any(isinstance(x, torch.Tensor) for x in a):
            return type(a)(wrap(f"{n}[{j}]", x) for j, x in enumerate(a))
        return a

    wargs = [wrap(n, a) for n, a in zip(names, args, strict=False)]
    wkwargs = {k: wrap(k, v) for k, v in kwargs.items()}
    return wargs, wkwargs


def _wrap(ex, t: torch.Tensor, name: str) -> NkiTensor:
    if t.dtype not in dtypes.SUPPORTED_TORCH:
        raise NkiValidationError(
            f"NKI kernel '{ex.kernel_name}': argument '{name}' is {t.dtype}, which the "
            f"NeuronCore's engines and DMA do not support (NKI dtypes: bool, int8/16/32, "
            f"uint8/16/32, float16, bfloat16, float32, float8_e4m3fn/e5m2/e8m0fnu); convert it "
            f"before the call"
        )
    shape = tuple(t.shape) or (1,)
    strides = tuple(t.stride()) or (1,)
    offset = t.storage_offset()
    extent = offset + 1 + sum((s - 1) * st for s, st in zip(shape, strides, strict=False) if s > 0)
    if ex.abstract:
        flat = torch.empty(extent, dtype=t.dtype, device="meta")
    else:
        host = t
        if t.device.type != "cpu":
            from torch_neuronx.runtime.host import host_alias

            host = host_alias(t)
        flat = host.as_strided((extent,), (1,), 0)
    st = Storage(MemoryRegion.shared_hbm, t.dtype, flat, 0, 0, name, owner=t)
    st.arg_name = name
    if ex.readonly and not ex.abstract and t.numel():
        lo, hi = _byte_range(t)
        for a, b, label in ex.readonly:
            if lo < b and a < hi:
                st.readonly = label
                break
    v = object.__new__(NkiTensor)
    return v._init(st, flat, t.dtype, shape, strides, offset, name)


def _unwrap(x):
    if x is None:
        return None
    if isinstance(x, NkiTensor):
        st = x.storage
        if st.buffer.on_chip:
            raise NkiValidationError(
                f"a kernel returns HBM tensors; {x!r} is an on-chip tile: store it into an "
                f"nl.ndarray(..., buffer=nl.shared_hbm) tensor and return that"
            )
        owner = st.owner
        if (
            (tuple(owner.shape) or (1,)) == x.shape
            and tuple(owner.stride() or (1,)) == x.strides
            and owner.storage_offset() == x.offset
            and x.dtype == owner.dtype
        ):
            return owner
        if x.dtype != owner.dtype:
            raise NkiValidationError(
                "returning a dtype-reinterpreted view of an HBM tensor is not supported"
            )
        return owner.as_strided(x.shape, x.strides, x.offset)
    if isinstance(x, tuple):
        return tuple(_unwrap(v) for v in x)
    if isinstance(x, list):
        return [_unwrap(v) for v in x]
    if isinstance(x, dict):
        return {k: _unwrap(v) for k, v in x.items()}
    if isinstance(x, (int, float, bool, str)):
        return x
    raise NkiValidationError(
        f"a kernel returns HBM tensors (or tuples/lists/dicts of them), not {type(x).__name__}"
    )


_ = (math, Any)
