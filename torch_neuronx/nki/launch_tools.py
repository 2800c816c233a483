"""``nki.baremetal``, ``nki.benchmark``, ``nki.profile``: the standalone launch decorators of
``neuronxcc.nki`` (NKI before 0.2; AWS's pages up to Neuron 2.26, e.g.
https://awsdocs-neuron.readthedocs-hosted.com/en/v2.26.1/nki/api/generated/nki.baremetal.html,
.../nki.benchmark.html, .../nki.profile.html).

On hardware they compile the kernel to a NEFF and run it on a NeuronCore without a framework,
with NumPy arrays in and out. Here the kernel is simulated on the emulated NeuronCore instead:

- the arguments (NumPy arrays, or CPU torch tensors) are copied to the current neuron device,
  the kernel runs, and its outputs come back in the inputs' kind (NumPy arrays for NumPy
  inputs);
- no compiler runs, so nothing is written for ``save_neff_name``, ``save_trace_name`` or
  ``artifacts_dir``, and ``additional_compile_opt`` has nothing to configure: a warning says
  so once per decorated kernel;
- ``benchmark`` reports the kernel's **modeled** device time (the instruction-level cost
  model of nki/cost.py, one launch included) where neuron-bench reports measured latency
  percentiles: the model is deterministic, so every percentile is the same figure and
  ``warmup``/``iters`` change nothing; host-device transfers are not included;
- ``profile`` writes what the simulator knows, a JSON summary of the launch (instructions
  per engine, DMA traffic, modeled busy time per engine), into ``working_directory``; no NEFF
  and no NTFF trace are produced (there is no device to trace), and its message says so.

Unlike the hardware decorators, ``benchmark`` and ``profile`` run the kernel on the actual
inputs, so their outputs are the kernel's results.
"""

from __future__ import annotations

import json
import os
import warnings

import torch

from .errors import NkiValidationError

_PERCENTILES = (0, 1, 10, 25, 50, 90, 99, 100)
_NO_COMPILER = ("save_neff_name", "save_trace_name", "artifacts_dir", "additional_compile_opt")


def _as_kernel(kernel, jit=None):
    from .kernel import Kernel, _Launch

    if isinstance(kernel, (Kernel, _Launch)):
        return kernel
    if isinstance(kernel, _Standalone):
        return kernel.kernel
    if callable(kernel):
        if jit is None:
            from .kernel import jit
        return jit(kernel)
    raise NkiValidationError(f"expected an NKI kernel function, got {type(kernel).__name__}")


def _to_device(x, kinds: list):
    if type(x).__module__ == "numpy" and type(x).__name__ == "ndarray":
        kinds.append("numpy")
        return torch.from_numpy(x.copy()).to("neuron")
    if isinstance(x, torch.Tensor):
        kinds.append("torch")
        return x.to("neuron")
    if isinstance(x, (list, tuple)):
        return type(x)(_to_device(v, kinds) for v in x)
    return x


def _back(x, numpy: bool):
    if isinstance(x, torch.Tensor):
        t = x.cpu()
        return t.numpy() if numpy else t
    if isinstance(x, (list, tuple)):
        return type(x)(_back(v, numpy) for v in x)
    if isinstance(x, dict):
        return {k: _back(v, numpy) for k, v in x.items()}
    return x


class _Standalone:
    """A kernel wrapped by one of the decorators: call it (or index it with a launch grid)."""

    def __init__(self, kernel, grid=None, _jit=None, **options):
        self.kernel = _as_kernel(kernel, _jit)
        self.grid = grid
        self.options = options
        self._warned = False
        self.calls = 0

    def __getitem__(self, grid):
        return type(self)(self.kernel, grid=grid, **self.options)

    def _warn_no_compiler(self, what: str):
        given = [k for k in _NO_COMPILER if self.options.get(k) is not None]
        if given and not self._warned:
            self._warned = True
            warnings.warn(
                f"nki.{what}: {', '.join(given)} ignored: the kernel is simulated on the "
                f"emulated NeuronCore, no compiler runs and no NEFF/NTFF file is written",
                stacklevel=3,
            )

    def _run(self, args, kwargs):
        kinds = []
        dargs = _to_device(args, kinds)
        dkwargs = {k: _to_device(v, kinds) for k, v in kwargs.items()}
        launch = self.kernel[self.grid] if self.grid is not None else self.kernel
        out = launch(*dargs, **dkwargs)
        self.calls += 1
        from .kernel import last_report

        report = last_report()
        return _back(out, "numpy" in kinds), report


class _Baremetal(_Standalone):
    def __call__(self, *args, **kwargs):
        self._warn_no_compiler("baremetal")
        return self._run(args, kwargs)[0]


class Latency:
    """``benchmark_result.nc_latency``: ``get_latency_percentile(p)`` in microseconds,
    **modeled** (every percentile is the one deterministic modeled time)."""

    def __init__(self, seconds: float, iters: int):
        self.modeled_us = seconds * 1e6
        self.iters = iters

    def get_latency_percentile(self, p: int) -> float:
        if p not in _PERCENTILES:
            raise NkiValidationError(
                f"get_latency_percentile({p!r}): available percentiles are {list(_PERCENTILES)}"
            )
        return self.modeled_us

    def __repr__(self):
        return f"Latency(modeled {self.modeled_us:.2f} us at every percentile)"


class BenchmarkResult:
    def __init__(self, nc_latency: Latency, report):
        self.nc_latency = nc_latency
        self.report = report  # the launch's KernelReport


class _Benchmark(_Standalone):
    benchmark_result: BenchmarkResult | None = None

    def __call__(self, *args, **kwargs):
        self._warn_no_compiler("benchmark")
        out, report = self._run(args, kwargs)
        seconds = report.modeled_seconds if report is not None else None
        if seconds is None:
            raise NkiValidationError("nki.benchmark: the launch has no modeled time")
        iters = int(self.options.get("iters", 100))
        self.benchmark_result = BenchmarkResult(Latency(seconds, iters), report)
        lat = self.benchmark_result.nc_latency.modeled_us
        print(
            f"nki.benchmark {report.name} on {report.target} (MODELED, not measured: "
            f"instruction-level cost model, one launch included, no host-device transfer; "
            f"deterministic, so warmup/iters do not change it): latency p0..p100 = {lat:.2f} us"
        )
        return out


class _Profile(_Standalone):
    def __call__(self, *args, **kwargs):
        wd = self.options.get("working_directory")
        if not wd or not os.path.isabs(wd):
            raise NkiValidationError(
                f"nki.profile: working_directory must be given as an absolute path, got {wd!r}"
            )
        nth = int(self.options.get("profile_nth", 1))
        out, report = self._run(args, kwargs)
        if self.calls != nth:
            return out
        os.makedirs(wd, exist_ok=True)
        path = os.path.join(wd, "nki_profile_summary.json")
        if os.path.exists(path) and not self.options.get("overwrite", False):
            raise FileExistsError(f"nki.profile: {path} exists; pass overwrite=True to replace it")
        summary = report.as_dict()
        summary["grid"] = list(summary["grid"])
        summary["modeled_busy"] = {str(k): v for k, v in summary["modeled_busy"].items()}
        summary["instructions"] = {str(k): v for k, v in summary["instructions"].items()}
        summary["modeled"] = (
            "modeled_seconds and modeled_busy come from the simulator's cost model, not a device"
        )
        summary["not_produced"] = [
            self.options.get("save_neff_name", "file.neff") + " (no compiler runs)",
            self.options.get("save_trace_name", "profile.ntff") + " (no device to trace)",
        ]
        with open(path, "w", encoding="utf-8") as f:
            json.dump(summary, f, indent=2, default=str)
        print(
            f"nki.profile {report.name}: wrote {path} (instruction counts, DMA traffic, MODELED "
            f"busy time per engine). Not produced: no NEFF and no NTFF trace (the kernel is "
            f"simulated; neuron-profile has nothing to open)"
        )
        return out


def _decorator(cls, kernel, options):
    if kernel is None:
        return lambda k: cls(k, **options)
    return cls(kernel, **options)


def baremetal(kernel=None, **kwargs):
    """``@nki.baremetal(...)``: call the kernel with NumPy arrays (or CPU tensors); it runs on
    the emulated NeuronCore and returns NumPy arrays (CPU tensors)."""
    return _decorator(_Baremetal, kernel, kwargs)


def benchmark(kernel=None, **kwargs):
    """``@nki.benchmark(warmup=10, iters=100, ...)``: like ``baremetal``, then prints and
    keeps (``kernel.benchmark_result.nc_latency``) the kernel's modeled latency."""
    return _decorator(_Benchmark, kernel, kwargs)


def profile(func=None, **kwargs):
    """``@nki.profile(working_directory=..., ...)``: like ``baremetal``; writes the modeled
    profile summary (JSON) of the ``profile_nth`` call; no NEFF/NTFF."""
    return _decorator(_Profile, func, kwargs)
