"""`grid_sampler_2d` (F.grid_sample) and `_weight_norm_interface` (weight_norm) are native on
neuron, eager and compiled, with CPU's bits over memory layouts. Found on Hugging Face's
deformable_detr and encodec, which `torch.compile(backend="neuron")` refused while the ops had
the fallback policy.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import torch_neuronx
from torch_neuronx.eager import op_policy
from torch_neuronx.testing.layouts import LAYOUT_NAMES, apply_layout, to_device_keeping_layout


def _sample(x, grid):
    return F.grid_sample(x, grid, mode="bilinear", align_corners=False)


def _weight_norm(v, g):
    return torch._weight_norm(v, g, 0)


def _inputs(name, layout):
    gen = torch.Generator().manual_seed(0)
    if name == "grid_sample":
        x = apply_layout(torch.randn(2, 3, 9, 11, generator=gen), layout)
        return _sample, [x, torch.rand(2, 5, 7, 2, generator=gen) * 2 - 1]
    v = apply_layout(torch.randn(8, 4, 3, 3, generator=gen), layout)
    return _weight_norm, [v, torch.randn(8, 1, 1, 1, generator=gen)]


def _grads(fn, args, dev):
    leaves = [
        to_device_keeping_layout(a.detach().clone(memory_format=torch.preserve_format), dev)
        if dev != "cpu"
        else a.detach().clone(memory_format=torch.preserve_format)
        for a in args
    ]
    leaves = [t.requires_grad_() for t in leaves]
    out = fn(*leaves)
    out.square().sum().backward()
    return [out, *(t.grad for t in leaves)]


@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "permuted"])
@pytest.mark.parametrize("name", ["grid_sample", "weight_norm"])
def test_eager_matches_cpu_bits_and_strides(name, layout):
    assert layout in LAYOUT_NAMES
    fn, args = _inputs(name, layout)
    torch_neuronx.clear_op_tracking()
    for c, n in zip(_grads(fn, args, "cpu"), _grads(fn, args, "neuron"), strict=True):
        assert n.stride() == c.stride() and torch.equal(n.detach().cpu(), c.detach())
    assert not torch_neuronx.get_fallback_ops()


@pytest.mark.parametrize("name", ["grid_sample", "weight_norm"])
def test_compiled_matches_cpu(name):
    fn, args = _inputs(name, "contiguous")
    # judged against CPU Inductor, as compiled graphs are (Inductor decomposes grid_sampler_2d)
    expected = _grads(torch.compile(fn), args, "cpu")
    torch._dynamo.reset()
    actual = _grads(torch.compile(fn, backend="neuron"), args, "neuron")
    for c, n in zip(expected, actual, strict=True):
        torch.testing.assert_close(n.detach().cpu(), c.detach())


def test_policy_lists_them_native():
    for name in (
        "grid_sampler_2d",
        "grid_sampler_2d_backward",
        "_weight_norm_interface",
        "_weight_norm_interface_backward",
    ):
        assert op_policy.policy_for(f"aten::{name}")[0] == op_policy.NATIVE, name
