"""Antialiased interpolation (`F.interpolate(..., antialias=True)`: aten's
`_upsample_{bilinear,bicubic,lanczos}2d_aa` and their backwards) is native on neuron, eager
and compiled, with CPU's bits over every memory layout. Found on Hugging Face's
cosmos3_edge_vision (its image resize), which `torch.compile(backend="neuron")` refused while
the ops had the fallback policy.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import torch_neuronx
from torch_neuronx.eager import op_policy
from torch_neuronx.testing.layouts import LAYOUT_NAMES, apply_layout, to_device_keeping_layout

MODES = ["bilinear", "bicubic", "lanczos"]


def _resize(mode):
    return lambda t: F.interpolate(t, size=(8, 7), mode=mode, antialias=True)


def _run(fn, x, go, device):
    xx = to_device_keeping_layout(x, device).requires_grad_()
    y = fn(xx)
    y.backward(go.to(device))
    return y, xx.grad


@pytest.mark.parametrize("layout", LAYOUT_NAMES)
@pytest.mark.parametrize("mode", MODES)
def test_eager_matches_cpu_bits_and_strides(mode, layout):
    gen = torch.Generator().manual_seed(0)
    x = apply_layout(torch.randn(2, 3, 17, 19, generator=gen), layout)
    go = torch.randn(2, 3, 8, 7, generator=gen)
    torch_neuronx.clear_op_tracking()
    (cy, cg), (ny, ng) = _run(_resize(mode), x, go, "cpu"), _run(_resize(mode), x, go, "neuron")
    assert torch.equal(ny.cpu(), cy) and ny.stride() == cy.stride()
    assert torch.equal(ng.cpu(), cg) and ng.stride() == cg.stride()
    assert not [op for op in torch_neuronx.get_fallback_ops() if "_aa" in op]


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_compiled_matches_cpu(mode):
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(2, 3, 17, 19, generator=gen).contiguous(memory_format=torch.channels_last)
    go = torch.randn(2, 3, 8, 7, generator=gen)
    cy, cg = _run(_resize(mode), x, go, "cpu")
    ny, ng = _run(torch.compile(_resize(mode), backend="neuron"), x, go, "neuron")
    torch.testing.assert_close(ny.cpu(), cy)
    torch.testing.assert_close(ng.cpu(), cg)


def test_policy_lists_every_antialiased_upsample_native():
    names = [n for n in op_policy.all_aten_ops() if n.startswith("aten::_upsample_") and "_aa" in n]
    assert len(names) == 6, names
    assert all(op_policy.policy_for(n)[0] == op_policy.NATIVE for n in names), names
