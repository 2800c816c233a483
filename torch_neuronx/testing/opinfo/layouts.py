"""The layout dimension of the OpInfo sweep: each sample again, its tensors in another memory
layout (torch_neuronx/testing/layouts.py: channels_last, permuted, offset, sliced, expanded,
contiguous).

A kernel can be right on the dense tensors OpInfo samples mostly are and wrong on others
(issue 26). The harness moves a sample with its exact geometry (``transfer.clone_tensor``
copies the whole storage and takes the same view, as ``to_device_keeping_layout`` does), so a
transformed sample reaches the device in its layout, and CPU runs the same transformed sample.

Which (op, category, layout) run: every one under ``TORCH_NEURONX_TEST_FULL=1``; in CI the
stable hash rule of ``selection.Plan.layouts`` (docs/coverage.md, "Memory layouts").
"""

from __future__ import annotations

import torch

from torch_neuronx.testing.layouts import LAYOUT_NAMES, apply_layout

from .database import _ensure_expecttest

__all__ = ["LAYOUT_NAMES", "layout_sample", "has_internal_overlap", "out_in_layout"]


def has_internal_overlap(t: torch.Tensor) -> bool:
    """Some elements of ``t`` share memory (a stride-0 dimension of size > 1): writing to it
    raises on CPU, so an in-place or ``out=`` call must raise the same error on the device."""
    return any(st == 0 and sz > 1 for sz, st in zip(t.shape, t.stride(), strict=True))


def _geometry(t: torch.Tensor) -> tuple:
    return (t.stride(), t.storage_offset(), t.untyped_storage().nbytes())


def layout_sample(sample, name: str):
    """``sample`` with every strided tensor that has elements in layout ``name`` (the same
    tensor object shared by two arguments stays shared), or None when no tensor's geometry
    changes (0-dim and zero-size tensors, 1-d tensors under ``permuted``, ...): the plain run
    of the sample already covers it.

    ``expanded`` repeats the first slice, so it changes values: it applies to the sample's
    input and to floating-point arguments, not to integer or bool arguments (indices,
    offsets, masks), whose repeated values make other inputs, not other layouts. (It found
    that CPU's own ``embedding_bag`` backward returns uninitialised memory for indices
    ``[1] * 6`` with offsets ``[0, 0, 0]`` and ``include_last_offset=True``: a CPU bug.)"""
    _ensure_expecttest()
    from torch.testing._internal.opinfo.core import SampleInput

    memo: dict[int, torch.Tensor] = {}
    changed = False

    def transform(x, is_input: bool):
        nonlocal changed
        if isinstance(x, (list, tuple)) and not isinstance(x, torch.Size):
            vals = [transform(v, is_input) for v in x]
            return type(x)(*vals) if hasattr(x, "_fields") else type(x)(vals)
        if isinstance(x, dict):
            return {k: transform(v, is_input) for k, v in x.items()}
        if not isinstance(x, torch.Tensor):
            return x
        if x.layout != torch.strided or x.is_quantized or x.device.type != "cpu":
            return x
        floating = x.dtype.is_floating_point or x.dtype.is_complex
        if name == "expanded" and not (is_input or floating):
            return x
        if id(x) not in memo:
            with torch.no_grad():
                y = apply_layout(x.detach(), name)
            if y is not x and _geometry(y) != _geometry(x):
                changed = True
            if x.requires_grad:
                y = y.detach().requires_grad_()
            memo[id(x)] = y
        return memo[id(x)]

    out = SampleInput(
        transform(sample.input, True),
        args=transform(sample.args, False),
        kwargs=transform(sample.kwargs, False),
        output_process_fn_grad=sample.output_process_fn_grad,
        broadcasts_input=sample.broadcasts_input,
        name=f"{sample.name}[{name}]",
    )
    return out if changed else None


def out_in_layout(expected, name: str):
    """CPU ``out=`` tensors shaped like ``expected``, laid out in ``name`` (an ``out=`` tensor
    keeps its strides when its shape is right, so the kernel must write through them)."""
    if isinstance(expected, torch.Tensor):
        base = torch.zeros(expected.shape, dtype=expected.dtype)
        return apply_layout(base, name)
    return tuple(out_in_layout(v, name) for v in expected)
