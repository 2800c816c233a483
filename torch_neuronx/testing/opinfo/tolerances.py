"""What the OpInfo database says about comparing against CPU: ops compared on structure
only (``relaxed``), tolerances per dtype, whether strides are defined."""

from __future__ import annotations

import torch

_EXTRA_RELAXED = {
    # name -> reason. Ops whose outputs are random or not defined uniquely and that the
    # database does not already mark on TestCommon.test_compare_cpu.
    "empty": "uninitialised memory",
    "empty_like": "uninitialised memory",
    "empty_strided": "uninitialised memory",
    "empty_permuted": "uninitialised memory",
    "new_empty": "uninitialised memory",
    "new_empty_strided": "uninitialised memory",
    "bernoulli": "random",
    "multinomial": "random",
    "normal": "random",
    "nn.functional.dropout": "random",
    "nn.functional.dropout2d": "random",
    "nn.functional.dropout3d": "random",
    "nn.functional.alpha_dropout": "random",
    "nn.functional.feature_alpha_dropout": "random",
    "nn.functional.rrelu": "random",
    "rand_like": "random",
    "randn_like": "random",
    "randint_like": "random",
    "randint": "random",
    "randn": "random",
    "uniform": "random",
    "exponential": "random",
    "geometric": "random",
    "cauchy": "random",
    "log_normal": "random",
    "nn.functional.fractional_max_pool2d": "random",
    "nn.functional.fractional_max_pool3d": "random",
    "torch._scaled_mm": "not supported on CPU",
}


def _skip_reason(decorator) -> str | None:
    """The reason of a ``unittest.skip(reason)`` decorator, else None."""
    qual = getattr(decorator, "__qualname__", "")
    if not qual.startswith("skip"):
        return None
    for cell in getattr(decorator, "__closure__", None) or ():
        try:
            v = cell.cell_contents
        except ValueError:
            continue
        if isinstance(v, str):
            return v
    return "skipped"


def _active(info, device_type: str, dtype, cls_name: str | None, test_name: str | None) -> bool:
    if info.cls_name is not None and cls_name is not None and info.cls_name != cls_name:
        return False
    if info.test_name is not None and info.test_name != test_name:
        return False
    if info.device_type is not None and info.device_type != device_type:
        return False
    if info.dtypes is not None and dtype not in info.dtypes:
        return False
    active = info.active_if
    return bool(active() if callable(active) else active)


def relaxed_reason(op, dtype, device_type: str = "neuron") -> str | None:
    """Why values of this op are compared on structure/dtype/shape only, or None."""
    from torch.testing._internal.opinfo.core import DecorateInfo

    if op.name in _EXTRA_RELAXED:
        return _EXTRA_RELAXED[op.name]
    for info in op.decorators or ():
        if not isinstance(info, DecorateInfo):
            continue
        if info.test_name != "test_compare_cpu":
            continue
        if not _active(info, device_type, dtype, "TestCommon", "test_compare_cpu"):
            continue
        for dec in info.decorators:
            r = _skip_reason(dec)
            if r is not None:
                return f"test_compare_cpu skipped upstream: {r}"
    return None


# tolerances -----------------------------------------------------------------------------

DEFAULT_TOL = {
    # (atol, rtol), torch.testing.assert_close defaults
    torch.float32: (1e-5, 1.3e-6),
    torch.complex64: (1e-5, 1.3e-6),
    torch.bfloat16: (1e-5, 1.6e-2),
    torch.float16: (1e-5, 1e-3),
}


# float64 / complex128 results on neuron have float32 precision: they are held to the
# tolerance of the op's float32 (complex64) results, i.e. assert_close's float32 defaults
# widened by the OpInfo's own float32 overrides (docs/eager.md, "Dtype policy").
_NARROW = {torch.float64: torch.float32, torch.complex128: torch.complex64}


def tolerance(op, dtype) -> tuple[float, float]:
    """(atol, rtol): assert_close's defaults, widened by every ``toleranceOverride`` /
    ``precisionOverride`` that the OpInfo declares for ``dtype`` (on any of its tests).
    A 64-bit dtype gets its 32-bit counterpart's tolerance (float32-level)."""
    if dtype in _NARROW:
        a64, r64 = _declared_tolerance(op, dtype)
        a32, r32 = _declared_tolerance(op, _NARROW[dtype])
        if _NARROW[dtype] == torch.complex64:  # complex64 overrides are rare: float32's too
            af, rf = _declared_tolerance(op, torch.float32)
            a32, r32 = max(a32, af), max(r32, rf)
        return max(a64, a32), max(r64, r32)
    return _declared_tolerance(op, dtype)


def _declared_tolerance(op, dtype) -> tuple[float, float]:
    from torch.testing._internal.common_device_type import precisionOverride, toleranceOverride
    from torch.testing._internal.opinfo.core import DecorateInfo

    atol, rtol = DEFAULT_TOL.get(dtype, (0.0, 0.0))
    for info in op.decorators or ():
        decs = info.decorators if isinstance(info, DecorateInfo) else [info]
        for dec in decs:
            if isinstance(dec, toleranceOverride) and dtype in dec.d:
                atol = max(atol, dec.d[dtype].atol)
                rtol = max(rtol, dec.d[dtype].rtol)
            elif isinstance(dec, precisionOverride) and dtype in dec.d:
                atol = max(atol, dec.d[dtype])
    return atol, rtol


F64_POLICY = (torch.float64, torch.complex128)


def strides_defined(op) -> bool:
    """Ops whose output strides PyTorch defines independently of the backend:
    elementwise ops (TensorIterator computes the output layout from the inputs)."""
    from torch.testing._internal.opinfo.core import BinaryUfuncInfo, UnaryUfuncInfo

    return isinstance(op, (UnaryUfuncInfo, BinaryUfuncInfo))


# Ops whose output strides are compared in layout variants although they are not elementwise
# would be every op: the device runs CPU's kernel, which lays its outputs out as CPU does,
# so a difference is a bug (issue 26: an output allocated contiguous where CPU's loop follows
# the inputs' strides). Exceptions, name -> why strides may legitimately differ:
STRIDES_DIFFER: dict[str, str] = {}


def strides_compared(op, layout: str | None) -> bool:
    """Whether the functional variant's output strides must equal CPU's: always for
    elementwise ops; for every op not in ``STRIDES_DIFFER`` when the sample was put in a
    memory ``layout`` (``layouts.layout_sample``)."""
    if strides_defined(op):
        return True
    return layout is not None and op.name not in STRIDES_DIFFER
