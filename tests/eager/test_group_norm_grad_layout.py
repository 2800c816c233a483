"""GroupNorm's gradients on neuron against CPU: bits and strides (docs/eager.md, "GroupNorm's
autograd").

Autograd's formula for ``native_group_norm`` (PyTorch's tools/autograd/derivatives.yaml) keeps
the input's memory format only on a CPU tensor and makes the gradient and the input contiguous
on any other device, so neuron ran CPU's contiguous kernel: other rounding, and an input
gradient computed contiguous (found on timm's cpubone_nano). eager/group_norm_autograd.py is
the formula with the device test answered ``cpu``; the channels_last tests below failed before
it. The double-backward tests guard the kernel's other branch (PyTorch's
infinitely_differentiable_native_group_norm_backward, copied), which was already right.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

DEVICE = "neuron"
_FORMATS = {
    "channels_last": ((2, 96, 2, 2), torch.channels_last),
    "channels_last_3d": ((2, 16, 3, 2, 2), torch.channels_last_3d),
    "contiguous": ((2, 16, 3, 4), torch.contiguous_format),
}


def _inputs(fmt: str, dtype: torch.dtype, affine: bool):
    shape, memory_format = _FORMATS[fmt]
    gen = torch.Generator().manual_seed(0)

    def r(*s):
        return torch.randn(*s, generator=gen).to(dtype)

    x = r(*shape).contiguous(memory_format=memory_format)
    go = r(*shape).contiguous(memory_format=memory_format)
    c = shape[1]
    w, b = (r(c), r(c)) if affine else (None, None)
    return x, go, w, b


def _grads(dev, x, go, w, b, groups, create_graph=False):
    xx = x.detach().to(dev).requires_grad_()
    ps = [None if p is None else p.detach().to(dev).requires_grad_() for p in (w, b)]
    leaves = [xx] + [p for p in ps if p is not None]
    gs = torch.autograd.grad(
        F.group_norm(xx, groups, *ps), leaves, go.to(dev), create_graph=create_graph
    )
    if not create_graph:
        return gs
    # second order: the gradient of a function of the first-order gradients
    s = sum((g * g).sum() for g in gs)
    return gs + torch.autograd.grad(s, leaves, allow_unused=True)


def _assert_same(cpu, dev):
    for c, n in zip(cpu, dev, strict=True):
        if c is None:
            assert n is None
            continue
        assert n.stride() == c.stride(), (n.stride(), c.stride())
        diff = (n.detach().cpu().double() - c.detach().double()).abs().max().item()
        assert torch.equal(n.detach().cpu(), c.detach()), diff


def test_group_norm_grad_keeps_cpus_layout_and_bits():
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(2, 96, 2, 2, generator=gen).contiguous(memory_format=torch.channels_last)
    go = torch.randn(2, 96, 2, 2, generator=gen).contiguous(memory_format=torch.channels_last)
    w, b = torch.randn(96, generator=gen), torch.randn(96, generator=gen)
    grads = []
    for dev in ("cpu", DEVICE):
        xx = x.detach().to(dev).requires_grad_()
        # detach: w.to("cpu") is w itself, which would make the device copies non-leaves
        ww, bb = w.detach().to(dev).requires_grad_(), b.detach().to(dev).requires_grad_()
        F.group_norm(xx, 1, ww, bb).backward(go.to(dev))
        grads.append((xx.grad, ww.grad, bb.grad))
    (cx, cw, cb), (nx, nw, nb) = grads
    assert nx.stride() == cx.stride(), (nx.stride(), cx.stride())
    for c, n in ((cx, nx), (cw, nw), (cb, nb)):
        assert torch.equal(n.cpu(), c)


@pytest.mark.parametrize("affine", [True, False], ids=["affine", "no_affine"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize("fmt", list(_FORMATS))
def test_first_order_grads_are_cpus(fmt, dtype, affine):
    """Input, weight and bias gradients (a non-leaf's view: ``autograd.grad``, whose input
    gradient keeps the kernel's strides) equal CPU's bit for bit, strides included."""
    x, go, w, b = _inputs(fmt, dtype, affine)
    _assert_same(_grads("cpu", x, go, w, b, 4), _grads(DEVICE, x, go, w, b, 4))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize("affine", [True, False], ids=["affine", "no_affine"])
@pytest.mark.parametrize("fmt", list(_FORMATS))
def test_double_backward_is_cpus(fmt, affine, dtype):
    """create_graph=True takes CPU's infinitely differentiable formula: first- and
    second-order gradients equal CPU's. (In bfloat16 the second order sums a channels_last
    product over two reduced dims, which CPU accumulates in float32: the fast path's sum
    hands such sums to the generic path; fast_ops.cpp, cpu_may_buffer_reduced_sum.)"""
    x, go, w, b = _inputs(fmt, dtype, affine)
    _assert_same(_grads("cpu", x, go, w, b, 4, True), _grads(DEVICE, x, go, w, b, 4, True))


def test_double_backward_float64_close_to_cpu():
    """float64 (computed at float32 precision by the dtype policy, so gradgradcheck's finite
    differences cannot run on the device): second-order gradients close to CPU's."""
    x, go, w, b = _inputs("channels_last", torch.float64, True)
    cpu = _grads("cpu", x, go, w, b, 4, True)
    dev = _grads(DEVICE, x, go, w, b, 4, True)
    for c, n in zip(cpu, dev, strict=True):
        if c is None:  # the bias gradient does not depend on the bias
            assert n is None
            continue
        assert n.stride() == c.stride()
        torch.testing.assert_close(n.detach().cpu(), c.detach(), rtol=1e-4, atol=1e-5)


def test_mean_and_rstd_gradients_are_cpus():
    """Gradients flowing into native_group_norm's mean and rstd outputs take the
    infinitely differentiable formula, as on CPU."""
    x, _, w, b = _inputs("channels_last", torch.float32, True)

    def grad(dev):
        xx = x.to(dev).requires_grad_()
        y, mean, rstd = torch.ops.aten.native_group_norm(
            xx, w.to(dev), b.to(dev), 2, 96, 4, 4, 1e-5
        )
        return torch.autograd.grad((y * y).sum() + mean.sum() + (rstd * rstd).sum(), [xx])

    _assert_same(grad("cpu"), grad(DEVICE))


def test_forward_ad_and_torch_func_keep_pytorchs_kernel():
    """Forward-mode AD and torch.func go to PyTorch's generic autograd kernel."""
    import torch.autograd.forward_ad as fwAD

    x, t, w, b = _inputs("contiguous", torch.float32, True)

    def tangent(dev):
        with fwAD.dual_level():
            y = F.group_norm(fwAD.make_dual(x.to(dev), t.to(dev)), 4, w.to(dev), b.to(dev))
            return fwAD.unpack_dual(y).tangent.cpu()

    assert torch.equal(tangent(DEVICE), tangent("cpu"))

    def func_grad(dev):
        return torch.func.grad(lambda a: (F.group_norm(a, 4, w.to(dev)) ** 2).sum())(x.to(dev))

    # torch.func over neuron tensors warns that real Trainium may not run it
    with pytest.warns(UserWarning, match="torch.func"):
        on_device = func_grad(DEVICE)
    assert torch.equal(on_device.cpu(), func_grad("cpu"))
