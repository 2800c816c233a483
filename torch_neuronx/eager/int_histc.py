"""Integer `torch.histc` on the neuron device, as CUDA has it.

PyTorch's CPU kernel of `aten::histc` takes floating inputs only ("histogram_cpu" not
implemented for 'Int'), while CUDA's takes every integer dtype too, and libraries rely on it
off CPU: transformers' MoE layers (integrations/moe.py) count tokens per expert with
`torch.histc(expert_ids.int(), ...)` on every device but CPU and MPS. The eager path runs CPU's
kernel on device memory, so integer inputs get here a decomposition into device ops with the
results of CUDA's `_histc_cuda_template` (aten/src/ATen/native/cuda/SummaryOps.cu):

* the result has the input's dtype;
* the bounds are the Scalars truncated to integers; when they are equal, the data's own
  min and max; when those are equal too, widened by one on each side;
* a value v in [lo, hi] counts in bin ``(v - lo) * bins // (hi - lo)`` (integer arithmetic in
  64 bits), the top bin closed; values outside [lo, hi] are dropped.

(CUDA keeps the bounds in the input's own type, so a bound outside it wraps; here bounds are
64-bit, which differs only for such out-of-range bounds.)

The same function is the compile backend's decomposition of integer `aten::histc`
(compile/decompositions.py): it uses tensor ops only and no host read, so it traces.
Floating inputs keep CPU's kernel: they go on through `aten::histc.out` on the generic path.
"""

from __future__ import annotations

import torch

from torch_neuronx.eager import python_kernels

_lib = torch.library.Library("aten", "IMPL")


def _check(bins: int, lo: int, hi: int) -> None:
    if bins <= 0:
        raise RuntimeError(f"histc(): bins must be > 0, but got {bins}")
    if not lo < hi:
        raise RuntimeError("max must be larger than min")


def histc_int(x: torch.Tensor, bins: int = 100, min=0, max=0) -> torch.Tensor:
    """CUDA's `torch.histc` of an integer tensor `x`, from device ops (see the module doc)."""
    lo, hi = int(min), int(max)  # Scalar.to<int64_t>(): truncation toward zero
    if bins <= 0:
        _check(bins, 0, 1)
    zeros = torch.zeros(bins, dtype=x.dtype, device=x.device)
    if lo == hi and x.numel() > 0:
        v = x.reshape(-1).to(torch.int64)
        lo_t, hi_t = v.min(), v.max()  # 0-d tensors: no host read (traceable)
        same = (lo_t == hi_t).to(torch.int64)
        lo_t, hi_t = lo_t - same, hi_t + same
    else:
        if lo == hi:
            lo, hi = lo - 1, hi + 1
        _check(bins, lo, hi)
        if x.numel() == 0:
            return zeros
        v = x.reshape(-1).to(torch.int64)
        lo_t, hi_t = lo, hi
    inside = (v >= lo_t) & (v <= hi_t)
    # (v - lo) >= 0 inside the range, so floor division is C++'s truncating one there; values
    # outside are clamped to a valid index and add 0.
    idx = torch.div((v - lo_t) * bins, hi_t - lo_t, rounding_mode="floor").clamp(0, bins - 1)
    return zeros.scatter_add(0, idx, inside.to(x.dtype))


def _histc(x: torch.Tensor, bins: int = 100, min=0, max=0) -> torch.Tensor:
    if not x.is_floating_point() and not x.is_complex() and x.dtype != torch.bool:
        return histc_int(x, bins, min, max)
    # CPU's kernel on device memory (the eager generic path), through the out= overload,
    # which this module leaves alone; the preallocated result needs no resize.
    out = torch.empty(bins if bins > 0 else 0, dtype=x.dtype, device=x.device)
    return torch.ops.aten.histc.out(x, bins, min, max, out=out)


def install() -> None:
    python_kernels.register(_lib, "histc", _histc, "PrivateUse1")
