"""Running every sample of an OpInfo (one category) or of a module database entry."""

from __future__ import annotations

import dataclasses

import torch

from .categories import FLOAT32, WIDE_CATEGORIES
from .checks import VARIANT_CHECKS, grad_targets, quiet
from .comparison import Mismatch, compare, error_reason
from .database import op_key
from .layouts import layout_sample
from .results import CPU_ERROR, FAIL, PASS, Result, device_error, dtype_name
from .selection import Plan, generate_samples, no_test_fn_tracking, seed_host
from .tolerances import DEFAULT_TOL, relaxed_reason
from .transfer import Call, clone_value, describe_sample, iter_tensors


def run_op_category(op, category: str, device: str, plan: Plan) -> list[Result]:
    """All results of one OpInfo for one category (see CATEGORIES)."""
    key = op_key(op)
    results: list[Result] = []
    for dtype in plan.dtypes(op, category):
        relaxed = relaxed_reason(op, dtype, torch.device(device).type)
        requires_grad = category in ("grad", "grad64")
        variants = ("grad",) if requires_grad else ("forward", "inplace", "out")
        if category == "integer" or category == "bfloat16":
            variants = ("forward", "inplace")
        try:
            pool = plan.pool_wide if category in WIDE_CATEGORIES else plan.pool
            samples = generate_samples(op, dtype, requires_grad, None if plan.full else pool)
        except Exception as e:  # noqa: BLE001
            results.append(
                Result(
                    key,
                    "forward",
                    dtype_name(dtype),
                    -1,
                    CPU_ERROR,
                    "samples",
                    f"sample generation failed: {error_reason(e)}",
                )
            )
            continue
        picked = plan.pick(op, category, dtype, samples)
        runs = [(i, sample, None) for i, sample in picked]
        layouts = plan.layouts(op, category)
        for i, sample in plan.layout_samples(picked) if layouts else ():
            for name in layouts:
                try:
                    moved = layout_sample(sample, name)
                except Exception as e:  # noqa: BLE001 - harness-level failure
                    results.append(
                        Result(
                            key,
                            "forward",
                            dtype_name(dtype),
                            i,
                            FAIL,
                            "harness",
                            f"layout {name}: {error_reason(e)}",
                            layout=name,
                        )
                    )
                    continue
                if moved is not None:  # None: no tensor of the sample changes geometry
                    runs.append((i, moved, name))
        for i, sample, layout in runs:
            results += _run_sample(op, key, sample, i, layout, variants, device, dtype, relaxed)
    return results


def _run_sample(op, key, sample, i, layout, variants, device, dtype, relaxed) -> list[Result]:
    """Every variant of one sample (in memory layout ``layout``, None: as OpInfo gives it)."""
    results = []
    desc = None
    for variant in variants:
        try:
            r = VARIANT_CHECKS[variant](op, sample, device, dtype, relaxed, layout)
        except Exception as e:  # noqa: BLE001 - harness-level failure
            r = (FAIL, "harness", error_reason(e))
        if r is None:
            continue
        status, kind, reason = r
        if desc is None:
            try:
                desc = describe_sample(sample)
            except Exception:  # noqa: BLE001
                desc = "?"
        results.append(
            Result(
                key,
                variant,
                dtype_name(dtype),
                i,
                status,
                kind,
                reason,
                desc,
                relaxed=relaxed is not None,
                layout=layout or "",
            )
        )
    return results


def run_module(minfo, device: str, plan: Plan, category: str) -> list[Result]:
    """Module ``minfo`` built on CPU (seeded), deep-copied to ``device``, run in eval mode
    (no dropout) on both: outputs (``float32``) or input and parameter gradients (``grad``)
    compared."""
    import copy

    key = f"module:{minfo.name}"
    results: list[Result] = []
    dtype = FLOAT32
    requires_grad = category == "grad"
    variant = "grad" if requires_grad else "forward"
    seed_host(0)
    with quiet(), no_test_fn_tracking():
        inputs = list(
            minfo.module_inputs_func(
                minfo, device="cpu", dtype=dtype, requires_grad=requires_grad, training=False
            )
        )
    chosen = plan.pick(minfo, category, dtype, inputs) if not plan.full else list(enumerate(inputs))
    atol, rtol = DEFAULT_TOL[dtype]
    for i, mi in chosen:
        if mi.forward_input is None:
            continue
        desc = f"{minfo.name}({mi.constructor_input.kwargs or mi.constructor_input.args})"[:200]
        try:
            seed_host(0)
            with quiet():
                m_cpu = (
                    minfo.module_cls(*mi.constructor_input.args, **mi.constructor_input.kwargs)
                    .to(dtype)
                    .eval()
                )
        except Exception as e:  # noqa: BLE001
            results.append(
                Result(key, variant, "float32", i, CPU_ERROR, "cpu", error_reason(e), desc)
            )
            continue
        fwd = SampleLike(mi.forward_input.args, mi.forward_input.kwargs)
        c_cpu, c_dev = fwd.clone("cpu"), fwd.clone(device)

        def run(m, call, dev, grad_outs):
            out = m(*call.args, **call.kwargs)
            if not requires_grad:
                return out, None, grad_outs
            outs = grad_targets(out)
            ins = [t for t in iter_tensors((call.args, call.kwargs)) if t.requires_grad]
            ins += [p for p in m.parameters() if p.requires_grad]
            if grad_outs is None:
                g = torch.Generator().manual_seed(1234)
                grad_outs = [torch.randn(o.shape, generator=g, dtype=o.dtype) for o in outs]
            grads = torch.autograd.grad(
                outs, ins, [go.to(dev) for go in grad_outs], allow_unused=True
            )
            return out, grads, grad_outs

        with quiet():
            try:
                out_cpu, g_cpu, gos = run(m_cpu, c_cpu, "cpu", None)
            except Exception as e:  # noqa: BLE001
                results.append(
                    Result(key, variant, "float32", i, CPU_ERROR, "cpu", error_reason(e), desc)
                )
                continue
            try:
                m_dev = copy.deepcopy(m_cpu).to(device)
                out_dev, g_dev, _ = run(m_dev, c_dev, device, gos)
            except Exception as e:  # noqa: BLE001
                st, kind, reason = device_error(e)
                results.append(Result(key, variant, "float32", i, st, kind, reason, desc))
                continue
        try:
            if requires_grad:
                compare(
                    list(g_dev),
                    list(g_cpu),
                    device_type=torch.device(device).type,
                    atol=1e-4,
                    rtol=1e-4,
                    check_strides=False,
                    path="grad",
                )
            else:
                compare(
                    out_dev,
                    out_cpu,
                    device_type=torch.device(device).type,
                    atol=1e-5,
                    rtol=1e-4,
                    check_strides=False,
                )
        except Mismatch as m:
            results.append(Result(key, variant, "float32", i, FAIL, m.kind, m.detail, desc))
            continue
        results.append(Result(key, variant, "float32", i, PASS, "", "", desc))
    return results


@dataclasses.dataclass
class SampleLike:
    args: tuple
    kwargs: dict

    def clone(self, device) -> Call:
        memo: dict = {}
        return Call(
            None,
            tuple(clone_value(a, device, memo) for a in self.args),
            {k: clone_value(v, device, memo) for k, v in self.kwargs.items()},
        )
