"""Moving samples between devices with their exact memory layout (sizes, strides, storage
offset, overlap), and describing a sample in a report."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import torch


def clone_tensor(t: torch.Tensor, device) -> torch.Tensor:
    """A fresh leaf copy of ``t`` on ``device`` with the same sizes, strides, storage
    offset and memory overlap (the whole storage is copied, then viewed the same way),
    and the same ``requires_grad``."""
    if t.layout != torch.strided or t.is_quantized:
        out = t.detach().to(device=device, copy=True)
        return out.requires_grad_(t.requires_grad)
    with torch.no_grad():
        src = t.detach()
        if src.is_conj():
            src = src.resolve_conj()
        if src.is_neg():
            src = src.resolve_neg()
        esize = src.element_size()
        n = src.untyped_storage().nbytes() // esize if esize else 0
        if n == 0 or src.numel() == 0:
            out = torch.empty_strided(src.size(), src.stride(), dtype=src.dtype, device=device)
        else:
            flat = torch.as_strided(src, (n,), (1,), 0)
            dflat = flat.to(device=device, copy=True)
            out = torch.empty(0, dtype=src.dtype, device=device)
            try:
                out.set_(dflat.untyped_storage(), src.storage_offset(), src.size(), src.stride())
            except Exception:
                out = dflat.as_strided(src.size(), src.stride(), src.storage_offset()).detach()
    if t.requires_grad:
        out.requires_grad_(True)
    return out


def _map_device(x, device):
    if isinstance(x, torch.device) and x.type == "cpu":
        return torch.device(device)
    if isinstance(x, str) and x == "cpu":
        return str(device)
    return x


def clone_value(x, device, memo: dict):
    """Recursively clone tensors (tensors shared by identity stay shared), map 'cpu'
    device arguments to ``device``."""
    if isinstance(x, torch.Tensor):
        k = id(x)
        if k not in memo:
            memo[k] = clone_tensor(x, device)
        return memo[k]
    if isinstance(x, (torch.device, str)):
        return _map_device(x, device)
    if isinstance(x, torch.Size):
        return x
    if isinstance(x, list):
        return [clone_value(v, device, memo) for v in x]
    if isinstance(x, tuple):
        vals = [clone_value(v, device, memo) for v in x]
        return type(x)(*vals) if hasattr(x, "_fields") else tuple(vals)
    if isinstance(x, dict):
        return {k: clone_value(v, device, memo) for k, v in x.items()}
    return x


@dataclasses.dataclass
class Call:
    input: Any
    args: tuple
    kwargs: dict


# op name -> positions in ``sample.args`` whose tensors stay on CPU on every device (the
# sample functions build them with a bare torch.tensor(...), and the op requires them
# on CPU: e.g. tensor_split's indices tensor).
_ARGS_ON_CPU = {
    "tensor_split": (0,),
}


def clone_sample(sample, device, op=None) -> Call:
    memo: dict = {}
    keep = _ARGS_ON_CPU.get(op.name, ()) if op is not None else ()
    return Call(
        clone_value(sample.input, device, memo),
        tuple(
            clone_value(a, "cpu" if i in keep else device, memo) for i, a in enumerate(sample.args)
        ),
        {k: clone_value(v, device, memo) for k, v in sample.kwargs.items()},
    )


def _iter_leaves(x):
    if isinstance(x, (list, tuple)) and not isinstance(x, torch.Size):
        for v in x:
            yield from _iter_leaves(v)
    elif isinstance(x, dict):
        for v in x.values():
            yield from _iter_leaves(v)
    else:
        yield x


def expected_device_type(call: Call, device) -> str:
    """Where the outputs of ``call`` belong: on the device under test when any input
    tensor or device argument is there; else (a factory call without ``device=``) on CPU,
    the default device."""
    want = torch.device(device).type
    for v in _iter_leaves((call.input, call.args, call.kwargs)):
        if isinstance(v, torch.Tensor) and v.device.type == want:
            return want
        if isinstance(v, torch.device) and v.type == want:
            return want
        if isinstance(v, str) and v.split(":")[0] == want:
            return want
    return "cpu"


def iter_tensors(x) -> Iterator[torch.Tensor]:
    if isinstance(x, torch.Tensor):
        yield x
    elif isinstance(x, (list, tuple)):
        for v in x:
            yield from iter_tensors(v)
    elif isinstance(x, dict):
        for v in x.values():
            yield from iter_tensors(v)


def describe_sample(sample) -> str:
    def fmt(x):
        if isinstance(x, torch.Tensor):
            s = f"T{list(x.shape)}"
            if x.layout != torch.strided:
                s += f"<{str(x.layout).replace('torch.', '')}>"
            elif x.dim() and not x.is_contiguous():
                s += f"@{list(x.stride())}"
            if x.dtype != torch.float32:
                s += f":{str(x.dtype).replace('torch.', '')}"
            return s
        if isinstance(x, (list, tuple)) and not isinstance(x, torch.Size):
            inner = ", ".join(fmt(v) for v in x[:6])
            if len(x) > 6:
                inner += ", ..."
            return f"[{inner}]" if isinstance(x, list) else f"({inner})"
        r = repr(x)
        return r if len(r) <= 40 else r[:37] + "..."

    parts = [fmt(sample.input)] + [fmt(a) for a in sample.args]
    parts += [f"{k}={fmt(v)}" for k, v in sample.kwargs.items()]
    s = ", ".join(parts)
    return s if len(s) <= 200 else s[:197] + "..."
