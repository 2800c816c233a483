"""Running one sample on CPU and on the device, per variant: functional, in-place,
``out=`` and gradient."""

from __future__ import annotations

import contextlib
import itertools
import warnings
from collections.abc import Callable

import torch

from .comparison import Mismatch, compare, error_reason
from .layouts import has_internal_overlap, out_in_layout
from .results import CPU_ERROR, FAIL, PASS, SKIP, device_error
from .tolerances import strides_compared, tolerance
from .transfer import Call, clone_sample, clone_value, expected_device_type, iter_tensors


@contextlib.contextmanager
def quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _call(fn: Callable, call: Call, **extra):
    return fn(call.input, *call.args, **call.kwargs, **extra)


def _run_twice(fn_cpu: Callable, fn_dev: Callable, *, both_on_error: bool = False):
    """(cpu_result, cpu_exc, dev_result, dev_exc). The device runs after a CPU error only
    with ``both_on_error`` (the caller then compares the two errors)."""
    try:
        cpu = fn_cpu()
        cpu_exc = None
    except Exception as e:  # noqa: BLE001
        cpu, cpu_exc = None, e
    if cpu_exc is not None and not both_on_error:
        return None, cpu_exc, None, None
    try:
        dev = fn_dev()
        dev_exc = None
    except Exception as e:  # noqa: BLE001
        dev, dev_exc = None, e
    return cpu, cpu_exc, dev, dev_exc


def _seeded(fn, relaxed=None):
    """Random/undefined ops are seeded identically before each run (on every device);
    the others need no seeding (torch.manual_seed is comparatively slow)."""
    if relaxed is None:
        return fn

    def run():
        torch.manual_seed(0)
        return fn()

    return run


def _same_error(cpu_exc: Exception, dev_exc: Exception | None) -> tuple[str, str, str]:
    """Verdict when CPU refuses a call that must be refused on every device (a write to a
    tensor whose elements overlap): the device must raise the same exception type."""
    if dev_exc is None:
        return FAIL, "no-error", f"CPU raises {error_reason(cpu_exc)}; the device does not"
    if type(dev_exc) is not type(cpu_exc):
        return FAIL, "error", f"CPU raises {error_reason(cpu_exc)}; device {error_reason(dev_exc)}"
    return PASS, "", ""


def _run_on_both(fn, sample, device: str, op, relaxed: str | None, *, writes_input=False):
    """Runs ``fn`` on a CPU and a device copy of ``sample`` (no grad, seeded alike).
    Returns (cpu sample, device sample, cpu result, device result, status or None), the
    status being the verdict when either side raised. ``writes_input``: ``fn`` writes to
    the sample's input, so an input with overlapping elements must raise on both."""
    c_cpu = clone_sample(sample, "cpu", op)
    c_dev = clone_sample(sample, device, op)
    overlap = (
        writes_input and isinstance(c_cpu.input, torch.Tensor) and has_internal_overlap(c_cpu.input)
    )
    with quiet(), torch.no_grad():
        cpu, cpu_exc, dev, dev_exc = _run_twice(
            _seeded(lambda: _call(fn, c_cpu), relaxed),
            _seeded(lambda: _call(fn, c_dev), relaxed),
            both_on_error=overlap,
        )
    if cpu_exc is not None and overlap:
        return c_cpu, c_dev, cpu, dev, _same_error(cpu_exc, dev_exc)
    if cpu_exc is not None:
        return c_cpu, c_dev, cpu, dev, (CPU_ERROR, "cpu", error_reason(cpu_exc))
    if dev_exc is not None:
        return c_cpu, c_dev, cpu, dev, device_error(dev_exc)
    return c_cpu, c_dev, cpu, dev, None


def check_forward(
    op, sample, device: str, dtype, relaxed: str | None, layout: str | None = None
) -> tuple[str, str, str]:
    """Functional variant. Returns (status, kind, reason). ``layout``: the memory layout
    the sample was put in (``layouts.layout_sample``), None for the sample as OpInfo gives
    it; output strides are compared as ``strides_compared`` says."""
    atol, rtol = tolerance(op, dtype)
    c_cpu, c_dev, cpu, dev, failed = _run_on_both(op, sample, device, op, relaxed)
    if failed is not None:
        return failed
    try:
        compare(
            dev,
            cpu,
            device_type=expected_device_type(c_dev, device),
            atol=atol,
            rtol=rtol,
            check_strides=strides_compared(op, layout) and relaxed is None,
            values=relaxed is None,
        )
        # inputs must not be modified differently (functional variants usually leave
        # them alone; a few mutate by contract)
        compare(
            c_dev.input,
            c_cpu.input,
            device_type=expected_device_type(c_dev, device),
            atol=atol,
            rtol=rtol,
            check_strides=False,
            values=relaxed is None,
            path="input",
        )
    except Mismatch as m:
        return FAIL, m.kind, m.detail
    return PASS, "", ""


def check_inplace(op, sample, device: str, dtype, relaxed: str | None, layout: str | None = None):
    fn = op.inplace_variant
    if fn is None:
        return None
    if sample.broadcasts_input:
        return SKIP, "broadcasts_input", "in-place variant cannot broadcast its input"
    atol, rtol = tolerance(op, dtype)
    c_cpu, c_dev, cpu, dev, failed = _run_on_both(
        fn, sample, device, op, relaxed, writes_input=True
    )
    if failed is not None:
        return failed
    try:
        if (cpu is c_cpu.input) and (dev is not c_dev.input):
            raise Mismatch("inplace-identity", "in-place variant did not return its input")
        compare(
            dev,
            cpu,
            device_type=expected_device_type(c_dev, device),
            atol=atol,
            rtol=rtol,
            check_strides=True,
            values=relaxed is None,
        )
        compare(
            c_dev.input,
            c_cpu.input,
            device_type=expected_device_type(c_dev, device),
            atol=atol,
            rtol=rtol,
            check_strides=True,
            values=relaxed is None,
            path="input",
        )
    except Mismatch as m:
        return FAIL, m.kind, m.detail
    return PASS, "", ""


def _empty_like_structure(x, device):
    if isinstance(x, torch.Tensor):
        return torch.empty(x.shape, dtype=x.dtype, device=device)
    if isinstance(x, (list, tuple)):
        return tuple(_empty_like_structure(v, device) for v in x)
    raise TypeError(f"cannot build out= for {type(x).__name__}")


def check_out(op, sample, device: str, dtype, relaxed: str | None, layout: str | None = None):
    """``out=`` variant; under a ``layout`` the ``out`` tensors are in that layout too (an
    ``out`` of the right shape keeps its strides, so the kernel writes through them)."""
    if not op.supports_out:
        return None
    atol, rtol = tolerance(op, dtype)
    c_ref = clone_sample(sample, "cpu", op)
    with quiet(), torch.no_grad():
        try:
            expected = _seeded(lambda: _call(op, c_ref), relaxed)()
        except Exception as e:  # noqa: BLE001
            return CPU_ERROR, "cpu", error_reason(e)
        if not (
            isinstance(expected, torch.Tensor)
            or (
                isinstance(expected, (list, tuple))
                and expected
                and all(isinstance(v, torch.Tensor) for v in expected)
            )
        ):
            return SKIP, "out-structure", "output is not a tensor or tuple of tensors"
        c_cpu = clone_sample(sample, "cpu", op)
        c_dev = clone_sample(sample, device, op)
        if layout is None:
            out_cpu = _empty_like_structure(expected, "cpu")
            out_dev = _empty_like_structure(expected, device)
        else:
            out_cpu = out_in_layout(expected, layout)
            out_dev = clone_value(out_cpu, device, {})
        overlap = any(has_internal_overlap(t) for t in iter_tensors(out_cpu))
        cpu, cpu_exc, dev, dev_exc = _run_twice(
            _seeded(lambda: _call(op, c_cpu, out=out_cpu), relaxed),
            _seeded(lambda: _call(op, c_dev, out=out_dev), relaxed),
            both_on_error=overlap,
        )
    if cpu_exc is not None and overlap:
        return _same_error(cpu_exc, dev_exc)
    if cpu_exc is not None:
        return CPU_ERROR, "cpu", error_reason(cpu_exc)
    if relaxed is None:
        try:
            compare(out_cpu, expected, device_type="cpu", atol=atol, rtol=rtol, check_strides=False)
        except Mismatch as m:
            return CPU_ERROR, "cpu", f"CPU out= result differs from CPU functional result: {m}"
    if dev_exc is not None:
        return device_error(dev_exc)
    try:
        outs_dev = list(iter_tensors(out_dev))
        if isinstance(dev, torch.Tensor):
            if len(outs_dev) != 1 or dev is not outs_dev[0]:
                raise Mismatch("out-identity", "out= call did not return its out tensor")
        elif isinstance(dev, (list, tuple)):
            if len(dev) != len(outs_dev) or any(
                a is not b for a, b in zip(dev, outs_dev, strict=True)
            ):
                raise Mismatch("out-identity", "out= call did not return its out tensors")
        compare(
            out_dev,
            out_cpu,
            device_type=torch.device(device).type,
            atol=atol,
            rtol=rtol,
            check_strides=True,
            values=relaxed is None,
        )
    except Mismatch as m:
        return FAIL, m.kind, m.detail
    return PASS, "", ""


def grad_targets(out) -> list[torch.Tensor]:
    return [
        t
        for t in iter_tensors(out)
        if t.requires_grad and (t.is_floating_point() or t.is_complex())
    ]


def _grad_inputs(call: Call) -> list[torch.Tensor]:
    seen, res = set(), []
    for t in itertools.chain(
        iter_tensors(call.input), iter_tensors(call.args), iter_tensors(call.kwargs)
    ):
        if t.requires_grad and id(t) not in seen:
            seen.add(id(t))
            res.append(t)
    return res


def check_grad(op, sample, device: str, dtype, relaxed: str | None, layout: str | None = None):
    atol, rtol = tolerance(op, dtype)
    c_cpu = clone_sample(sample, "cpu", op)
    c_dev = clone_sample(sample, device, op)
    wrapper = op.gradcheck_wrapper

    def run(call: Call, dev: str, grad_outs: list | None):
        if relaxed is not None:
            torch.manual_seed(0)
        out = wrapper(op.op, call.input, *call.args, **call.kwargs)
        out = sample.output_process_fn_grad(out)
        outs = grad_targets(out)
        ins = _grad_inputs(call)
        if not outs or not ins:
            return None, None
        if grad_outs is None:
            g = torch.Generator().manual_seed(1234)
            grad_outs = [torch.randn(o.shape, generator=g, dtype=o.dtype) for o in outs]
        gos = [go.to(dev) for go in grad_outs]
        grads = torch.autograd.grad(outs, ins, gos, allow_unused=True)
        return grad_outs, grads

    with quiet():
        try:
            grad_outs, cpu_grads = run(c_cpu, "cpu", None)
        except Exception as e:  # noqa: BLE001
            return CPU_ERROR, "cpu", error_reason(e)
        if grad_outs is None:
            return SKIP, "no-grad", "no differentiable output or input"
        try:
            _, dev_grads = run(c_dev, device, grad_outs)
        except Exception as e:  # noqa: BLE001
            return device_error(e)
    if dev_grads is None:
        return FAIL, "structure", "device run produced no differentiable output"
    try:
        compare(
            list(dev_grads),
            list(cpu_grads),
            device_type=expected_device_type(c_dev, device),
            atol=atol,
            rtol=rtol,
            check_strides=False,
            values=relaxed is None,
            path="grad",
        )
    except Mismatch as m:
        return FAIL, m.kind, m.detail
    return PASS, "", ""


VARIANT_CHECKS = {
    "forward": check_forward,
    "inplace": check_inplace,
    "out": check_out,
    "grad": check_grad,
}
