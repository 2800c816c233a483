"""GroupNorm's autograd on the neuron device, as PyTorch's formula computes it on CPU.

PyTorch's derivative of ``native_group_norm``
(https://github.com/pytorch/pytorch/blob/v2.13.0/tools/autograd/derivatives.yaml) calls
``native_group_norm_backward`` with the gradient and the input in the input's suggested memory
format only where ``device().is_cpu()``, and contiguous on any other device (XPU excepted). On
neuron, whose kernels are CPU's, that ran CPU's contiguous kernel for a channels_last input:
other rounding than CPU's channels_last kernel, and a contiguous input gradient where CPU's is
channels_last (found on timm's cpubone_nano; tests/eager/test_group_norm_grad_layout.py).

The AutogradPrivateUse1 kernel below is that formula with the device test answered ``cpu``:

* first order (grad mode off in backward, no gradient for mean/rstd): ``native_group_norm_
  backward`` on the gradient and input made contiguous in the input's suggested format;
* otherwise (``create_graph=True``, or a gradient for mean/rstd): ``infinitely_differentiable_
  native_group_norm_backward``, copied below op for op from
  https://github.com/pytorch/pytorch/blob/v2.13.0/torch/csrc/autograd/FunctionsManual.cpp
  (BSD-3-Clause, Copyright (c) Meta Platforms, Inc. and affiliates), so double backward runs
  the ops CPU runs and gives CPU's bits.

Forward-mode AD and torch.func transforms keep PyTorch's own kernel: its jvp formulas have no
device test, and an autograd.Function under torch.func would need functorch rules of its own.
Such a call is redispatched to the generic autograd kernel (VariableType) through the
``AutogradOther`` key, which holds the kernel that ``AutogradPrivateUse1`` held before this
module (under torch.func the first-order gradient is then the contiguous one, as before).
"""

from __future__ import annotations

import torch
import torch.autograd.forward_ad as fwAD
from torch._prims_common import suggest_memory_format

from torch_neuronx.eager import python_kernels

aten = torch.ops.aten
_lib = torch.library.Library("aten", "IMPL")

_DK = torch._C.DispatchKey


def _generic_autograd(*args):
    """native_group_norm through PyTorch's generic autograd kernel (VariableType): for this
    call the thread excludes the per-backend autograd keys and includes ``AutogradOther``,
    whose table entry is that kernel (this module overrides only AutogradPrivateUse1). The
    dispatcher computes the rest of the key set as for any call (fallthrough keys masked,
    functorch's and the backend's keys kept), and the kernel's redispatch below autograd
    reaches what it reached from AutogradPrivateUse1."""
    with (
        torch._C._ExcludeDispatchKeyGuard(torch._C.DispatchKeySet(_DK.AutogradPrivateUse1)),
        torch._C._IncludeDispatchKeyGuard(_DK.AutogradOther),
    ):
        return aten.native_group_norm.default(*args)


def _var_mean_backward(dvar, dmean, x, dims):
    """FunctionsManual.cpp's var_mean_backward with correction 0 and keepdim (its only use
    here): var_backward's ``2 / n * dvar * (x - x.mean(dims))`` plus mean_backward's
    ``dmean.expand(x.shape) / n``."""
    n = 1
    for d in dims:
        n *= x.shape[d]
    gself = (2.0 / n) * dvar * (x - x.mean(dims, keepdim=True))
    return gself + dmean.expand(x.shape) / n


def infinitely_differentiable_backward(
    dY, dmean, drstd, X, mean, rstd, gamma, N, C, HxW, group, eps, mask
):
    """PyTorch's ``infinitely_differentiable_native_group_norm_backward`` (FunctionsManual.cpp,
    v2.13.0), the same ops in the same order. (It also computes ``var`` from rstd and never
    uses it; that is left out.)"""
    G = group
    D = C // G
    s = 1.0 / (D * HxW)
    dX = dgamma = dbeta = None
    X_tensor = X.reshape(N, G, D, HxW)
    mean_tensor = mean.reshape(N, G, 1, 1)
    rstd_tensor = rstd.reshape(N, G, 1, 1)
    ds = db = dY_tensor = None
    if dY is not None:
        dY_tensor = dY.reshape(N, G, D, HxW)
        ds = (dY_tensor * X_tensor).sum(3).unsqueeze(-1)
        db = dY_tensor.sum(3).unsqueeze(-1)
    if mask[0]:
        gamma_tensor = gamma.reshape(1, G, D, 1) if gamma is not None else None
        rstd_cube = rstd_tensor * rstd_tensor * rstd_tensor
        dvar = None
        if drstd is not None:
            dvar = -0.5 * rstd_cube * drstd.view(N, G, 1, 1)
        if dY is not None:
            a = rstd_tensor * gamma_tensor if gamma is not None else rstd_tensor
            b = ((ds * gamma_tensor).sum(2) if gamma is not None else ds.sum(2)).unsqueeze(-2)
            c = ((db * gamma_tensor).sum(2) if gamma is not None else db.sum(2)).unsqueeze(-2)
            b = (c * mean_tensor - b) * rstd_cube * s
            c = -b * mean_tensor - c * rstd_tensor * s
            dX = a * dY_tensor + b * X_tensor + c
            if dmean is not None and drstd is not None:
                dX += _var_mean_backward(dvar, dmean.view(N, G, 1, 1), X_tensor, (2, 3))
            dX = dX.reshape_as(X)
        elif dmean is not None and drstd is not None:
            dX = _var_mean_backward(dvar, dmean.view(N, G, 1, 1), X_tensor, (2, 3)).reshape_as(X)
    if mask[1] and dY is not None:
        dgamma = ((ds - db * mean_tensor) * rstd_tensor).sum(0).reshape_as(gamma)
    if mask[2] and dY is not None:
        dbeta = db.sum(0).reshape_as(gamma)
    return dX, dgamma, dbeta


class _NativeGroupNorm(torch.autograd.Function):
    @staticmethod
    def forward(input, weight, bias, N, C, HxW, group, eps):
        with torch._C._AutoDispatchBelowAutograd():
            return aten.native_group_norm.default(input, weight, bias, N, C, HxW, group, eps)

    @staticmethod
    def setup_context(ctx, inputs, output):
        input, weight, _, N, C, HxW, group, eps = inputs
        _, mean, rstd = output
        ctx.save_for_backward(input, weight, mean, rstd)
        ctx.args = (N, C, HxW, group, eps)
        # autograd passes an output's missing gradient as undefined, not as zeros
        ctx.set_materialize_grads(False)

    @staticmethod
    def backward(ctx, dY, dmean, drstd):
        input, weight, mean, rstd = ctx.saved_tensors
        N, C, HxW, group, eps = ctx.args
        mask = list(ctx.needs_input_grad[:3])
        if torch.is_grad_enabled() or dmean is not None or drstd is not None:
            grads = infinitely_differentiable_backward(
                dY, dmean, drstd, input, mean, rstd, weight, N, C, HxW, group, eps, mask
            )
        elif dY is None:
            grads = (None, None, None)
        else:
            # derivatives.yaml's cpu branch: both in the input's suggested memory format
            fmt = suggest_memory_format(input)
            grads = aten.native_group_norm_backward.default(
                dY.contiguous(memory_format=fmt),
                input.contiguous(memory_format=fmt),
                mean,
                rstd,
                weight,
                N,
                C,
                HxW,
                group,
                mask,
            )
        return (*grads, None, None, None, None, None)


def _has_tangent(t: torch.Tensor | None) -> bool:
    return t is not None and fwAD.unpack_dual(t).tangent is not None


def _native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    # a contiguous input: the formula's two branches are the same (gradient and input both
    # contiguous), and PyTorch's own C++ kernel costs less than the autograd.Function below
    # (measured on a GroupNorm(4, 32) step at 8x32x8x8: 1.5x CPU's time against 2.5x)
    if (
        input.is_contiguous()
        or torch._C._are_functorch_transforms_active()
        or any(_has_tangent(t) for t in (input, weight, bias))
    ):
        return _generic_autograd(input, weight, bias, N, C, HxW, group, eps)
    if torch.is_grad_enabled() and any(
        t is not None and t.requires_grad for t in (input, weight, bias)
    ):
        return _NativeGroupNorm.apply(input, weight, bias, N, C, HxW, group, eps)
    with torch._C._AutoDispatchBelowAutograd():
        return aten.native_group_norm.default(input, weight, bias, N, C, HxW, group, eps)


def install() -> None:
    python_kernels.register(_lib, "native_group_norm", _native_group_norm, "AutogradPrivateUse1")
