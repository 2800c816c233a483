"""The host's branch of the decompositions that branch on the device type.

The neuron backend traces with Inductor's decomposition table on neuron (fake) tensors and
then generates code with Inductor's *CPU* code generator (backend.py), so a graph should
decompose as Inductor decomposes it for CPU: the emulated core's compiler is CPU Inductor,
and the zoo's compiled check judges the device against CPU Inductor (model_zoo/train_check).
A few decompositions ask the tensor's device type and take another branch for any device
that is not ``cpu`` -- a GPU's branch, or none -- and so gave neuron a different graph, with
different float32 rounding, than CPU Inductor (timm's efficientformerv2_s0: its attention at
1x1 resolution is a bmm of [B, 1, K] x [B, K, 1], which Inductor computes on CPU as a
multiply and a sum; on neuron it stayed a bmm, and the step-0 gradients differed from CPU
Inductor by 1.7e-3).

The functions below are those decompositions with the device test answered ``cpu``; the
rest of each function is PyTorch's, copied from PyTorch v2.13.0 (BSD-3-Clause, Copyright (c)
Meta Platforms, Inc. and affiliates; see PyTorch's LICENSE):
https://github.com/pytorch/pytorch/blob/v2.13.0/torch/_inductor/decomposition.py (bmm, mm,
addmm) and https://github.com/pytorch/pytorch/blob/v2.13.0/torch/_refs/__init__.py
(native_group_norm). One more is not a branch of PyTorch's: convolution_backward's cpu branch
(the host's kernel) routed around a oneDNN defect (oneDNN #6035), as eager routes it.
`tests/compile/test_host_decompositions.py` scans the installed
table for device-type tests, so a PyTorch upgrade that adds or changes one fails there
until it is listed here or reviewed as device-independent in `REVIEWED`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch._decomp.decompositions import pw_cast_for_opmath
from torch.fx.experimental.symbolic_shapes import guard_or_false, statically_known_true

aten = torch.ops.aten

__all__ = ["HOST_BRANCH", "REVIEWED", "host_branch_table"]


@pw_cast_for_opmath
def _bmm(self: torch.Tensor, batch2: torch.Tensor, out_dtype=None) -> torch.Tensor:
    # outer product [B, M, 1] x [B, 1, N] (every device)
    if statically_known_true(self.shape[2] == 1) and statically_known_true(batch2.shape[1] == 1):
        return (self * batch2).contiguous()
    # the cpu branch: a batch of dot products [B, 1, K] x [B, K, 1] is a multiply and a sum
    if statically_known_true(self.size(1) == 1) and statically_known_true(batch2.size(-1) == 1):
        return torch.sum(self.squeeze(1) * batch2.squeeze(-1), dim=1, keepdim=True).unsqueeze(1)
    return NotImplemented


@pw_cast_for_opmath
def _addmm(
    self: torch.Tensor,
    mat1: torch.Tensor,
    mat2: torch.Tensor,
    out_dtype=None,
    beta: torch.types.Number = 1,
    alpha: torch.types.Number = 1,
) -> torch.Tensor:
    # the cpu branch (the non-cpu one, an outer product for K = 1, is not taken on cpu)
    if statically_known_true(mat1.size(0) == 1) and statically_known_true(mat2.size(-1) == 1):
        out = torch.sum(mat1.squeeze(0) * mat2.squeeze(-1), dim=0, keepdim=True).unsqueeze(0)
        return alpha * out + beta * self
    if (
        statically_known_true(mat1.size(0) == 1)
        and guard_or_false(mat2.size(0) <= 16)
        and guard_or_false(mat2.size(1) <= 16)
    ):
        out = (mat1.T * mat2).sum(dim=0, keepdim=True)
        return alpha * out + beta * self
    return NotImplemented


@pw_cast_for_opmath
def _mm(self: torch.Tensor, input2: torch.Tensor, out_dtype=None) -> torch.Tensor:
    # the cpu branch: an outer product only for small operands, a dot product as mul + sum
    if (
        statically_known_true(self.size(-1) == 1)
        and statically_known_true(self.size(0) != 1)
        and statically_known_true(input2.size(1) != 1)
        and statically_known_true(self.size(0) > 0)
        and statically_known_true(input2.size(0) == 1)
        and (self.dtype == input2.dtype)
        and guard_or_false((torch.numel(self) + torch.numel(input2)) <= 32)
    ):
        return self * input2
    if statically_known_true(self.size(0) == 1) and statically_known_true(input2.size(-1) == 1):
        return torch.sum(self.squeeze(0) * input2.squeeze(-1), dim=0, keepdim=True).unsqueeze(0)
    return NotImplemented


#: oneDNN's input-channel block (8 floats on AVX2, 16 on AVX-512): below it, the strided 1x1
#: weight-gradient kernel takes the workspace path that oneDNN #6035 breaks
_ONEDNN_CHANNEL_BLOCK = 16
#: the dtypes CPU's convolution runs with oneDNN (float64 takes PyTorch's own kernels)
_ONEDNN_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


def hits_onednn_workspace_defect(input, weight, stride, transposed, groups, output_mask) -> bool:
    """Whether CPU's convolution_backward would run oneDNN's defective kernel (oneDNN issue
    #6035, https://github.com/uxlfoundation/oneDNN/issues/6035: heap corruption under one
    thread, weight gradients 78-88 % off under two): a strided 1x1 (1x1x1) convolution's weight
    gradient, channels-last, with fewer input channels per group than oneDNN's channel block.
    The same test as eager's (csrc/eager/conv_backward.cpp); keep the two equal."""
    from torch._prims_common import suggest_memory_format

    if transposed or not output_mask[1] or weight.ndim not in (4, 5):
        return False
    if input.dtype not in _ONEDNN_DTYPES or groups <= 0:
        return False
    if not all(statically_known_true(k == 1) for k in weight.shape[2:]):
        return False
    if not any(guard_or_false(s > 1) for s in stride):
        return False
    if not guard_or_false(input.size(1) // groups < _ONEDNN_CHANNEL_BLOCK):
        return False
    # PyTorch's oneDNN convolution runs channels-last when the input or the weight suggests it
    return torch.contiguous_format != suggest_memory_format(
        input
    ) or torch.contiguous_format != suggest_memory_format(weight)


@torch.library.custom_op("neuronx::convolution_backward_nchw", mutates_args=())
def convolution_backward_nchw(
    grad_output: torch.Tensor,
    input: torch.Tensor,
    weight: torch.Tensor,
    bias_sizes: list[int],
    stride: list[int],
    padding: list[int],
    dilation: list[int],
    transposed: bool,
    output_padding: list[int],
    groups: int,
    output_mask: list[bool],
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """convolution_backward on nchw (contiguous) copies, its input and weight gradients given
    back in the channels-last format CPU's kernel gives them; an unrequested gradient is an
    empty tensor. An op of its own, not `.contiguous()` in the graph: Inductor's layout
    optimization gives a clone feeding a convolution channels-last strides again."""
    fmt = torch.channels_last if input.ndim == 4 else torch.channels_last_3d
    grads = aten.convolution_backward(
        grad_output.contiguous(),
        input.contiguous(),
        weight.contiguous(),
        bias_sizes,
        stride,
        padding,
        dilation,
        transposed,
        output_padding,
        groups,
        output_mask,
    )
    out = []
    for i, g in enumerate(grads):
        if g is None:
            out.append(grad_output.new_empty(0))
        else:
            # clone, not contiguous: a 1x1 weight gradient is already "channels-last
            # contiguous" and would keep its nchw strides, where CPU's kernel gives nhwc ones
            out.append(g.clone(memory_format=fmt) if i < 2 else g.clone())
    return tuple(out)


@convolution_backward_nchw.register_fake
def _(
    grad_output,
    input,
    weight,
    bias_sizes,
    stride,
    padding,
    dilation,
    transposed,
    output_padding,
    groups,
    output_mask,
):
    fmt = torch.channels_last if input.ndim == 4 else torch.channels_last_3d
    shapes = (input.shape, weight.shape, bias_sizes)
    return tuple(
        torch.empty(
            shape,
            dtype=grad_output.dtype,
            device=grad_output.device,
            memory_format=fmt if i < 2 else torch.contiguous_format,
        )
        if output_mask[i]
        else grad_output.new_empty(0)
        for i, shape in enumerate(shapes)
    )


def _convolution_backward(*args):
    # (aten.convolution_backward's 11 arguments, passed on as they came)
    _, input, weight, _, stride, _, _, transposed, _, groups, output_mask = args
    # the cpu branch is none (the host's aten kernel), except around oneDNN #6035, where the
    # graph runs the backward on contiguous copies (as eager does: csrc/eager/conv_backward.cpp)
    if not hits_onednn_workspace_defect(input, weight, stride, transposed, groups, output_mask):
        return NotImplemented
    grads = convolution_backward_nchw(*args)
    return tuple(g if output_mask[i] else None for i, g in enumerate(grads))


def _native_group_norm(
    input: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    batch_size: int,
    num_channels: int,
    flattened_inner_size: int,
    num_groups: int,
    eps: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    import torch._prims_common as utils
    from torch._refs import _maybe_convert_to_dtype, _unsqueeze_multiple

    torch._check(
        input.ndim >= 2,
        lambda: f"Expected at least 2 dimensions for input tensor but received {input.ndim}",
    )
    torch._check(
        num_channels % num_groups == 0,
        lambda: (
            "Expected number of channels in input to be divisible by num_groups, "
            + f"but got input of shape {input.shape} and num_groups = {num_groups}"
        ),
    )
    computation_dtype = utils.get_computation_dtype(input.dtype)
    input_acc = _maybe_convert_to_dtype(input, computation_dtype)
    reduction_dims = [2, 3]
    input_reshaped = torch.reshape(
        input_acc, [batch_size, num_groups, num_channels // num_groups, flattened_inner_size]
    )
    reduction_dims = utils.canonicalize_dims(input_reshaped.ndim, reduction_dims)
    biased_var, mean = torch.var_mean(
        input_reshaped, dim=reduction_dims, unbiased=False, keepdim=True
    )
    rstd = torch.rsqrt(biased_var + eps)
    if weight is not None:  # the cpu branch: x * (rstd * w) + (b - mean * rstd * w)
        weight_reshaped = torch.reshape(weight, [1, num_groups, num_channels // num_groups, 1])
        w = rstd * weight_reshaped
        b = -mean * w
        if bias is not None:
            bias_reshaped = torch.reshape(bias, [1, num_groups, num_channels // num_groups, 1])
            b = b + bias_reshaped
        w = w.contiguous().as_strided([batch_size, num_channels], [num_channels, 1])
        b = b.contiguous().as_strided([batch_size, num_channels], [num_channels, 1])
        broadcast_dims = list(range(2, input.ndim))
        out = input_acc * _unsqueeze_multiple(w, broadcast_dims) + _unsqueeze_multiple(
            b, broadcast_dims
        )
    else:
        out = (input_reshaped - mean) * rstd
        out = out.view(input.shape)
        broadcast_dims = [0] + list(range(2, input.ndim))
        if bias is not None:
            out = out + _unsqueeze_multiple(bias, broadcast_dims)
    out = _maybe_convert_to_dtype(out, input.dtype)
    mean = _maybe_convert_to_dtype(mean, input.dtype)
    rstd = _maybe_convert_to_dtype(rstd, input.dtype)
    mean = torch.squeeze(mean, reduction_dims)
    rstd = torch.squeeze(rstd, reduction_dims)
    return (out, mean, rstd)


#: op -> the host's branch of its decomposition (every overload the table decomposes)
HOST_BRANCH: dict[Any, Callable] = {
    **{getattr(aten.bmm, o): _bmm for o in ("default", "dtype")},
    **{getattr(aten.mm, o): _mm for o in ("default", "dtype")},
    **{getattr(aten.addmm, o): _addmm for o in ("default", "dtype")},
    aten.native_group_norm.default: _native_group_norm,
    aten.convolution_backward.default: _convolution_backward,
}

#: decompositions that test the device type but give neuron the host's graph (reviewed
#: against PyTorch v2.13.0): function -> why
REVIEWED: dict[str, str] = {
    "torch._decomp.decompositions._to_copy": "the cpu test is on the *target* device of a "
    "copy; a copy to the host is the host's branch on every device",
    "torch._decomp.decompositions.log_sigmoid_forward": "tests is_cuda/is_xpu: neuron takes "
    "the cpu branch",
    "torch._decomp.decompositions.max_pool2d_with_indices_backward": "tests xpu and mps: "
    "neuron takes the cpu branch",
    "torch._decomp.decompositions_for_rng.bernoulli_": "only with functionalized rng (off)",
    "torch._decomp.decompositions_for_rng.bernoulli_p": "only with functionalized rng (off)",
    "torch._inductor.decomposition._softmax_backward_data": "the device test is a comment",
    "torch._inductor.decomposition.grid_sampler_2d": "the cpu test only chooses whether the "
    "grid is expanded over channels, the same arithmetic per element",
    "torch._inductor.decomposition.repeat_interleave_Tensor": "tests mps: neuron takes the "
    "cpu branch",
    "torch._refs.masked_fill": "the device test only checks a scalar's device",
}


def host_branch_table(table: dict[Any, Callable]) -> dict[Any, Callable]:
    """`table` with the host's branch for the ops of `HOST_BRANCH` that it decomposes."""
    out = dict(table)
    for op, fn in HOST_BRANCH.items():
        if op in out:
            out[op] = fn
    return out
