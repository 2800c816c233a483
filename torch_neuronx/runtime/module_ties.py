"""Keep tied parameters tied when modules move to or from neuron.

nn.Module._apply swaps `param.data` in place only between "dense" backends that c10 knows
(CPU, CUDA, ...); for PrivateUse1 it creates a new Parameter per owning module, so weights
tied by identity (a GPT head tied to its embedding) silently become two parameters. After
the outermost _apply we restore every identity the module tree had before the move.
"""

from __future__ import annotations

import threading

import torch

from torch_neuronx.runtime import patches

_state = threading.local()
_orig_apply = torch.nn.Module._apply


def _apply(self, fn, recurse=True):
    depth = getattr(_state, "depth", 0)
    if depth:
        return _orig_apply(self, fn, recurse)
    groups: dict[int, list[tuple[torch.nn.Module, str]]] = {}
    for mod in self.modules():
        for name, p in mod._parameters.items():
            if p is not None:
                groups.setdefault(id(p), []).append((mod, name))
    shared = [g for g in groups.values() if len(g) > 1]
    _state.depth = depth + 1
    try:
        out = _orig_apply(self, fn, recurse)
    finally:
        _state.depth = depth
    for group in shared:
        first_mod, first_name = group[0]
        keep = first_mod._parameters[first_name]
        for mod, name in group[1:]:
            if mod._parameters[name] is not keep:
                mod._parameters[name] = keep
    return out


def install() -> None:
    patches.replace(
        torch.nn.Module,
        "_apply",
        _apply,
        reason="keep parameters tied by identity tied when a module moves to or from neuron "
        "(PyTorch creates one new Parameter per owning module for PrivateUse1)",
    )
