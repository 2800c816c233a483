"""Fake-tensor propagation of a lowered (host) graph, with Inductor's meaning of ``view``.

AOT autograd compiles the backward graph with its saved activations restrided to the
strides the compiled forward really produced (``jit_compile_runtime_wrappers``: "saved
activations can have different stride to eager if the compiler does layout
optimization"), while the graph's ``aten.view`` nodes were traced with the eager strides.
Inductor never re-propagates, and its ``view`` lowering (``ir.View.create``) copies a
non-viewable input to contiguous first. Re-propagating on those real strides (as
``_lower_to_host`` must, to swap neuron metadata for host metadata) can then hit a
``view`` whose input is no longer viewable: channels_last ConvNeXt's LayerNorm statistic
comes out of the compiled forward with strides (4, 1, 2, 2), not its traced ones, and turns the
NHWC gradient's layout. Here such a ``view`` gets the value Inductor will compute: a
contiguous copy viewed to the new shape. The graph itself is left unchanged.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.fx.passes.fake_tensor_prop import FakeTensorProp

_VIEWS = (torch.ops.aten.view.default, torch.ops.aten._unsafe_view.default)


class HostFakeTensorProp(FakeTensorProp):
    def call_function(self, target, args, kwargs) -> Any:
        if target in _VIEWS:
            src = args[0]
            if isinstance(src, torch.Tensor) and not _viewable(src, args[1]):
                # Inductor's View.create: realize contiguous, then view.
                return target(src.contiguous(), *args[1:], **kwargs)
        return super().call_function(target, args, kwargs)


def _viewable(t: torch.Tensor, shape) -> bool:
    """Whether ``t.view(shape)`` needs no copy (the check ``Tensor.view`` itself makes)."""
    from torch._refs import _reshape_view_helper

    try:
        _reshape_view_helper(t, *shape, allow_copy=False)
    except (ValueError, RuntimeError):
        return False
    return True
