"""Memory layouts for differential tests: the same values in other strides.

A kernel can be right on contiguous tensors and silently wrong on others (issue 26: a binary
op between two channels_last tensors on the eager fast path laid its output out as contiguous
while CPU's loop wrote it in channels_last order). Every differential test therefore runs its
inputs in several layouts, and moves them to the device with their geometry intact.

`LAYOUTS` maps a name to a transform of a CPU tensor. Each transform keeps the values except
`expanded`, which repeats the first slice along a stride-0 dimension (both sides of a
comparison get the same tensor, so that is still a valid case). A transform that does not apply
to a tensor (0-dim, too few dimensions) returns it unchanged.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

__all__ = ["LAYOUTS", "LAYOUT_NAMES", "apply_layout", "to_device_keeping_layout", "describe"]


def _dense_in_order(x: torch.Tensor, order: list[int]) -> torch.Tensor:
    """`x`'s values, dense in memory with dimensions laid out outermost-first in `order`."""
    inverse = [order.index(d) for d in range(x.dim())]
    return x.permute(order).contiguous().permute(inverse)


def _channels_last(x: torch.Tensor) -> torch.Tensor:
    if x.dim() == 4:
        return x.contiguous(memory_format=torch.channels_last)
    if x.dim() == 5:
        return x.contiguous(memory_format=torch.channels_last_3d)
    if x.dim() == 3:  # (N, C, L) with channels innermost: what a conv1d in NLC order gives
        return _dense_in_order(x, [0, 2, 1])
    return x


def _permuted(x: torch.Tensor) -> torch.Tensor:
    """Dense, every dimension in reverse order in memory (a transpose for 2-d)."""
    if x.dim() < 2:
        return x
    return _dense_in_order(x, list(reversed(range(x.dim()))))


def _offset(x: torch.Tensor) -> torch.Tensor:
    """Contiguous, but 5 elements into a larger storage (a view with a storage offset). The 5
    leading elements are zeros, not uninitialised memory: a test that builds the layout once
    per device (the fuzzer) may reach them through `as_strided`, and must see the same bits."""
    buf = torch.zeros(x.numel() + 5, dtype=x.dtype)
    view = buf[5:].view(x.shape)
    view.copy_(x)
    return view


def _sliced(x: torch.Tensor) -> torch.Tensor:
    """Every other element of a larger tensor along the last dimension (stride 2), offset 1."""
    if x.dim() == 0:
        return x
    shape = list(x.shape)
    shape[-1] = 2 * shape[-1] + 1
    view = torch.zeros(shape, dtype=x.dtype)[..., 1::2]
    view.copy_(x)
    return view


def _expanded(x: torch.Tensor) -> torch.Tensor:
    """A stride-0 first dimension: the first slice, repeated (other values, same shape)."""
    if x.dim() == 0 or x.shape[0] <= 1:
        return x
    return x[:1].expand(x.shape)


LAYOUTS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "contiguous": lambda x: x.contiguous(),
    "channels_last": _channels_last,
    "permuted": _permuted,
    "offset": _offset,
    "sliced": _sliced,
    "expanded": _expanded,
}
LAYOUT_NAMES = list(LAYOUTS)


def apply_layout(value, name: str):
    """`value` in layout `name` when it is a tensor with elements; anything else unchanged."""
    if isinstance(value, torch.Tensor) and value.numel() > 0:
        return LAYOUTS[name](value)
    return value


def to_device_keeping_layout(x: torch.Tensor, device) -> torch.Tensor:
    """`x` on `device` with the same sizes, strides and storage offset.

    `Tensor.to` makes a dense copy, which would hide every layout under test: the whole storage
    is copied instead, and the same view is taken of it on the device.
    """
    if not isinstance(x, torch.Tensor) or x.device == torch.device(device):
        return x
    item = x.element_size()
    n = x.untyped_storage().nbytes() // item
    flat = torch.empty(0, dtype=x.dtype).set_(x.untyped_storage(), 0, (n,), (1,))
    out = flat.to(device).as_strided(x.shape, x.stride(), x.storage_offset())
    return out.requires_grad_() if x.requires_grad else out


def describe(x: torch.Tensor) -> str:
    return f"{tuple(x.shape)} strides {x.stride()} offset {x.storage_offset()}"
