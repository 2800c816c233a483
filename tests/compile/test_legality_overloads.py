"""The legality pass accepts ops that eager mode runs as their decomposition, whatever their
overload names. `aten::_unsafe_index` has only a named overload (``.Tensor``); asking the
dispatcher about the bare name raised, the pass read that as "no decomposition", and every
compiled graph with bilinear upsampling failed (Inductor's decomposition of
``upsample_bilinear2d`` emits ``_unsafe_index``): SAM-HQ's vision model in the model zoo,
issue 26)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from torch_neuronx.compile import legality
from torch_neuronx.eager import op_policy


def test_ops_with_only_named_overloads_are_seen_to_decompose():
    reason = op_policy.DEFAULT_FALLBACK_REASON
    assert legality._eager_decomposes("aten::_unsafe_index", reason)
    assert legality._eager_decomposes("aten::_safe_softmax", reason)  # a default overload
    assert not legality._eager_decomposes("aten::linalg_qr", reason)  # a CPU kernel of its own
    assert not legality._eager_decomposes("aten::no_such_op", reason)


def _upsample(x):
    return F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False) * 3


def test_bilinear_upsampling_compiles_and_trains_like_cpu(device):
    x = torch.randn(2, 3, 5, 5, generator=torch.Generator().manual_seed(0))
    ref_in = x.clone().requires_grad_()
    ref = _upsample(ref_in)
    ref.square().sum().backward()
    dev_in = x.to(device).requires_grad_()
    out = torch.compile(_upsample, backend="neuron")(dev_in)
    out.square().sum().backward()
    torch.testing.assert_close(out.detach().cpu(), ref.detach())
    torch.testing.assert_close(dev_in.grad.cpu(), ref_in.grad)


def test_unsafe_index_compiles_like_cpu(device):
    def f(x, i):
        return torch.ops.aten._unsafe_index(x, [i]) * 2

    x, i = torch.randn(4, 5), torch.tensor([0, 2, 3])
    out = torch.compile(f, backend="neuron")(x.to(device), i.to(device))
    torch.testing.assert_close(out.cpu(), f(x, i))
