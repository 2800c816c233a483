"""Comparing a device result with CPU's: structure, dtype, shape, device type, values within
tolerance, strides."""

from __future__ import annotations

import math

import torch

from .tolerances import DEFAULT_TOL, F64_POLICY


class Mismatch(Exception):
    """A neuron result differs from the CPU result. ``kind`` groups failures."""

    def __init__(self, kind: str, detail: str):
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail


def to_host(t: torch.Tensor) -> torch.Tensor:
    if t.device.type == "cpu":
        return t.detach()
    return t.detach().to("cpu")


def compare(
    actual,
    expected,
    *,
    device_type: str,
    atol: float,
    rtol: float,
    check_strides: bool,
    values: bool = True,
    path: str = "out",
) -> None:
    """Raise Mismatch unless ``actual`` (device result) matches ``expected`` (CPU)."""
    if isinstance(expected, torch.Tensor):
        if not isinstance(actual, torch.Tensor):
            raise Mismatch("type", f"{path}: expected Tensor, got {type(actual).__name__}")
        want_dev = device_type if expected.device.type == "cpu" else expected.device.type
        if actual.device.type != want_dev:
            raise Mismatch("device", f"{path}: on {actual.device}, expected {want_dev}")
        if actual.dtype != expected.dtype:
            raise Mismatch("dtype", f"{path}: {actual.dtype} != {expected.dtype}")
        if actual.shape != expected.shape:
            raise Mismatch("shape", f"{path}: {list(actual.shape)} != {list(expected.shape)}")
        if actual.layout != expected.layout:
            raise Mismatch("layout", f"{path}: {actual.layout} != {expected.layout}")
        if check_strides and expected.layout == torch.strided and expected.numel() > 1:
            if actual.stride() != expected.stride():
                raise Mismatch("stride", f"{path}: {actual.stride()} != {expected.stride()}")
        if not values:
            return
        try:
            a = to_host(actual)
        except Exception as e:
            raise Mismatch("copy-to-cpu", f"{path}: {type(e).__name__}: {_first_line(e)}") from e
        e_ = expected.detach()
        if e_.dtype in F64_POLICY and device_type != "cpu":
            # float64 arithmetic on neuron runs in float32 by design: a float64 result
            # (float_power, softmax(dtype=float64), ...) is held to float32 tolerances.
            atol = max(atol, DEFAULT_TOL[torch.float32][0])
            rtol = max(rtol, DEFAULT_TOL[torch.float32][1])
        if e_.layout != torch.strided:
            a, e_ = a.to_dense(), e_.to_dense()
        if e_.is_quantized:
            a, e_ = a.dequantize(), e_.dequantize()
        try:
            torch.testing.assert_close(
                a, e_, atol=atol, rtol=rtol, equal_nan=True, check_device=False, check_stride=False
            )
        except AssertionError as err:
            msg = " ".join(str(err).split())
            raise Mismatch("values", f"{path}: {msg[:300]}") from err
        return
    if isinstance(expected, (list, tuple)) and not isinstance(expected, torch.Size):
        if not isinstance(actual, (list, tuple)) or len(actual) != len(expected):
            raise Mismatch(
                "structure",
                f"{path}: {type(actual).__name__} "
                f"len {len(actual) if isinstance(actual, (list, tuple)) else '-'}"
                f" != {type(expected).__name__} len {len(expected)}",
            )
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            compare(
                a,
                e,
                device_type=device_type,
                atol=atol,
                rtol=rtol,
                check_strides=check_strides,
                values=values,
                path=f"{path}[{i}]",
            )
        return
    if isinstance(expected, dict):
        if not isinstance(actual, dict) or set(actual) != set(expected):
            raise Mismatch("structure", f"{path}: dict keys differ")
        for k in expected:
            compare(
                actual[k],
                expected[k],
                device_type=device_type,
                atol=atol,
                rtol=rtol,
                check_strides=check_strides,
                values=values,
                path=f"{path}[{k!r}]",
            )
        return
    if isinstance(expected, torch.device):
        want = torch.device(device_type) if expected.type == "cpu" else expected
        if not isinstance(actual, torch.device) or actual.type != want.type:
            raise Mismatch("device", f"{path}: {actual} != {want}")
        return
    if isinstance(expected, (bool, int, float, complex)) and not isinstance(expected, torch.Size):
        if isinstance(actual, torch.Tensor) or type(actual) is not type(expected):
            raise Mismatch("type", f"{path}: {type(actual).__name__} != {type(expected).__name__}")
        if not values:
            return
        if isinstance(expected, float) and math.isnan(expected):
            if not (isinstance(actual, float) and math.isnan(actual)):
                raise Mismatch("values", f"{path}: {actual!r} != nan")
            return
        if isinstance(expected, (float, complex)):
            if abs(actual - expected) > atol + rtol * abs(expected) and actual != expected:
                raise Mismatch("values", f"{path}: {actual!r} != {expected!r}")
        elif actual != expected:
            raise Mismatch("values", f"{path}: {actual!r} != {expected!r}")
        return
    if values and actual != expected:
        raise Mismatch("values", f"{path}: {actual!r} != {expected!r}")


def _first_line(e: BaseException) -> str:
    s = str(e).strip().splitlines()
    return (s[0] if s else "")[:240]


def error_reason(e: BaseException) -> str:
    """Stable one-line reason for an exception raised on the device."""
    return f"{type(e).__name__}: {_first_line(e)}"
