"""A backward ``view`` whose input is no longer viewable once the saved activations carry
the strides the compiled forward really produced (issue 26: timm ConvNeXt/MambaOut in
channels_last). AOT autograd traces the backward with eager strides, then hands the
backend its saved LayerNorm statistic restrided to (4, 1, 2, 2); the backend's host
re-propagation must give that ``view`` Inductor's meaning (copy, then view) instead of
raising "Cannot view a tensor ...". The pattern is the exact one from the ConvNeXt
backward graph: stat * grad -> NCHW permute -> layer scale -> NHWC permute -> view."""

import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.proxy_tensor import make_fx

from torch_neuronx.compile.backend import _lower_to_host

aten = torch.ops.aten


def _pattern(stat, grad, gamma):
    y = aten.mul.Tensor(stat, grad)  # (2, 2, 2, 48) NHWC
    y = aten.permute.default(y, [0, 3, 1, 2])
    y = aten.mul.Tensor(y, aten.view.default(gamma, [1, -1, 1, 1]))
    y = aten.permute.default(y, [0, 2, 3, 1])
    return (aten.view.default(y, [8, 48]),)


def _inputs():
    g = torch.Generator().manual_seed(0)
    stat = torch.rand(2, 2, 2, 1, generator=g) + 0.5
    grad = torch.randn(2, 2, 2, 48, generator=g)
    gamma = torch.randn(48, generator=g)
    return stat, grad, gamma


def test_restrided_saved_stat_view_lowers_and_matches_cpu():
    from torch._inductor.compile_fx import compile_fx_inner
    from torch._inductor.virtualized import V

    stat, grad, gamma = _inputs()
    gm = make_fx(_pattern)(stat, grad, gamma)  # traced with eager (contiguous) strides
    # The compiled forward's real layout of the saved statistic (ConvNeXt, channels_last).
    real_stat = torch.empty_strided((2, 2, 2, 1), (4, 1, 2, 2)).copy_(stat)
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    fakes = [mode.from_tensor(t) for t in (real_stat, grad, gamma)]
    lowered = _lower_to_host(gm, fakes)  # raised ValueError before the fix

    view = [n for n in lowered.gm.graph.nodes if n.target is aten.view.default][-1]
    assert tuple(view.meta["val"].shape) == (8, 48)
    with V.set_fake_mode(lowered.fake_mode):
        compiled = compile_fx_inner(lowered.gm, lowered.host_inputs)
    (out,) = compiled([real_stat, grad, gamma])
    (ref,) = _pattern_reference(stat, grad, gamma)
    torch.testing.assert_close(out, ref)


def _pattern_reference(stat, grad, gamma):
    """Eager CPU meaning: the same arithmetic with reshape (which copies where view cannot)."""
    y = (stat * grad).permute(0, 3, 1, 2) * gamma.view(1, -1, 1, 1)
    return (y.permute(0, 2, 3, 1).reshape(8, 48),)
