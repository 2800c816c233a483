"""`_prelu_kernel_backward` and `rrelu_with_noise_backward` are native, as their forwards are:
element-wise work with one reduction (PReLU's weight gradient). As CPU fallbacks they were
the one op of Hugging Face's dab-detr (nn.PReLU) that left the device in eager. CPU's bits
and strides over memory layouts; no op falls back."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import torch_neuronx
from torch_neuronx.eager import op_policy
from torch_neuronx.testing.layouts import apply_layout, to_device_keeping_layout


def _leaves(args, dev):
    out = []
    for a in args:
        t = a.detach().clone(memory_format=torch.preserve_format)
        out.append((to_device_keeping_layout(t, dev) if dev != "cpu" else t).requires_grad_())
    return out


def _prelu_grads(x, w, dev):
    x, w = _leaves([x, w], dev)
    y = F.prelu(x, w)
    y.square().sum().backward()
    return [y, x.grad, w.grad]


@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "permuted", "sliced"])
@pytest.mark.parametrize("channels", [1, 6])  # one shared slope, or one per channel
def test_prelu_backward_matches_cpu_bits_and_strides(layout, channels):
    gen = torch.Generator().manual_seed(0)
    x = apply_layout(torch.randn(2, 6, 5, 7, generator=gen), layout)
    w = torch.rand(channels, generator=gen)
    torch_neuronx.clear_op_tracking()
    for c, n in zip(_prelu_grads(x, w, "cpu"), _prelu_grads(x, w, "neuron"), strict=True):
        assert n.stride() == c.stride() and torch.equal(n.detach().cpu(), c.detach())
    assert not torch_neuronx.get_fallback_ops()


def test_rrelu_backward_matches_cpu_on_equal_noise():
    # training mode draws each negative slope: both sides draw from the same seed (the neuron
    # generator draws CPU's sequence), so the slopes and the gradients are equal
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(4, 9, generator=gen)
    grads = []
    torch_neuronx.clear_op_tracking()
    for dev in ("cpu", "neuron"):
        (leaf,) = _leaves([x], dev)
        torch.manual_seed(3)
        y = F.rrelu(leaf, training=True)
        y.square().sum().backward()
        grads.append((y.detach().cpu(), leaf.grad.cpu()))
    assert not torch_neuronx.get_fallback_ops()
    assert torch.equal(grads[0][0], grads[1][0]) and torch.equal(grads[0][1], grads[1][1])


def test_policy_lists_them_native():
    for name in ("_prelu_kernel_backward", "rrelu_with_noise_backward"):
        assert op_policy.policy_for(f"aten::{name}")[0] == op_policy.NATIVE, name
