"""Parameters keep their identity when modules move to or from neuron, as they do on CUDA.

nn.Module._apply swaps `param.data` in place only between "dense" backends that c10 knows
(CPU, CUDA, ...; `torch._has_compatible_shallow_copy_type`); for PrivateUse1 it creates a new
Parameter per owning module. Two things users rely on then break silently:

- an optimizer built before `model.to(device)` (the pytorch/examples DDP tutorial does this)
  holds the old CPU Parameters and updates them, while the model trains nothing (issue 26);
- weights tied by identity (a GPT head tied to its embedding) become two parameters.

After the outermost _apply, each Parameter object the module tree held before is given the
converted tensor's contents with `torch.utils.swap_tensors` (PyTorch's own mechanism for
`torch.__future__.set_swap_module_params_on_conversion`), so the same Python objects are now
neuron tensors and every owner holds them again. A Parameter that cannot be swapped (it has a
weak reference, or something else holds its TensorImpl) keeps PyTorch's behaviour, with a
warning that says what breaks and what to do; ties are restored either way.
"""

from __future__ import annotations

import threading
import warnings

import torch

from torch_neuronx.runtime import patches

_state = threading.local()
_orig_apply = torch.nn.Module._apply


def _owners(module: torch.nn.Module) -> dict[int, tuple[torch.nn.Parameter, list]]:
    """id(parameter) -> (the parameter, [(owning module, name), ...]) over the module tree."""
    groups: dict[int, tuple[torch.nn.Parameter, list]] = {}
    for mod in module.modules():
        for name, p in mod._parameters.items():
            if p is not None:
                groups.setdefault(id(p), (p, []))[1].append((mod, name))
    return groups


def _keep_identity(old: torch.nn.Parameter, new: torch.nn.Parameter) -> torch.nn.Parameter:
    """`old`, now holding `new`'s contents; `new` itself when they cannot be swapped."""
    if type(old) is not type(new) or old.requires_grad != new.requires_grad:
        return new
    try:
        torch.utils.swap_tensors(old, new)
    except RuntimeError as e:
        warnings.warn(
            f"Module.to: a parameter of shape {tuple(new.shape)} could not keep its identity "
            f"when it moved to {new.device} ({e}); the module now holds a new Parameter object, "
            "so an optimizer or a reference taken before the move still points to the old one. "
            "Build the optimizer after moving the model.",
            stacklevel=4,
        )
        return new
    return old


def _apply(self, fn, recurse=True):
    depth = getattr(_state, "depth", 0)
    if depth:
        return _orig_apply(self, fn, recurse)
    before = _owners(self)
    _state.depth = depth + 1
    try:
        out = _orig_apply(self, fn, recurse)
    finally:
        _state.depth = depth
    # nn.RNNBase keeps weak references to its parameters (`_flat_weight_refs`, rebuilt by its
    # own _apply inside ours), and swap_tensors refuses a tensor with weak references: drop
    # them for the swap, then let each RNN rebuild its flat weights from the swapped objects
    # (its `_flat_weights` list still names the new Parameter objects, which now hold the
    # old contents).
    rnns = [m for m in self.modules() if isinstance(m, torch.nn.RNNBase)]
    for m in rnns:
        m._flat_weight_refs = []
    for old, owners in before.values():
        first_mod, first_name = owners[0]
        new = first_mod._parameters.get(first_name)
        if new is None:
            continue
        keep = new if new is old else _keep_identity(old, new)
        for mod, name in owners:
            if mod._parameters.get(name) is not keep:
                mod._parameters[name] = keep
    for m in rnns:
        m._init_flat_weights()
    return out


def install() -> None:
    patches.replace(
        torch.nn.Module,
        "_apply",
        _apply,
        reason="keep each Parameter object (and so optimizers built before the move and "
        "weight ties) when a module moves to or from neuron, as Module.to does on CUDA "
        "(PyTorch creates a new Parameter per owning module for PrivateUse1)",
    )
