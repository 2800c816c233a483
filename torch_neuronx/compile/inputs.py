"""What ``torch.compile`` does differently for backend="neuron": static shapes, CPU inputs.

Static shapes: the call compiles with ``dynamic=False`` when ``dynamic`` is unset or None
(see :func:`static_shapes`); other backends' calls are passed on unchanged.

TorchNeuron copies CPU tensors passed to a compiled function to the device. The backend can
only do that for graph inputs that reach it, but an op mixing a CPU argument with neuron
tensors (a CPU batch and a module's neuron parameters, or ``x_cpu @ w_neuron`` in a plain
function) never reaches the backend: Dynamo's own tracing rejects the mix first. So the
callable that ``torch.compile`` returns for backend="neuron" (given explicitly, by the
decorator form, or through ``torch.compiler.set_default_backend``) moves CPU tensor
arguments to the neuron device eagerly, before the compiled region: a forward pre-hook on a
compiled module (target: the module's device), a thin wrapper around a compiled function
(target: the device of its first neuron tensor argument, else the current neuron device;
in-place updates of a moved argument are copied back). CPU tensors that still reach the
backend as graph inputs (a module without neuron parameters, a CPU tensor held in a global)
are moved by the backend's runtime wrapper with the same functions (backend.py).

With TORCH_NEURONX_DYNAMO_DISABLE_CPU_AUTOCOPY=1 a CPU tensor input is an error naming its
position instead (:func:`autocopy_error`, the one builder of that error).

This module is installed at autoload, so it imports neither Dynamo nor Inductor.
"""

from __future__ import annotations

import functools
import inspect
import itertools

import torch
from torch.utils._pytree import tree_leaves, tree_map

from torch_neuronx.runtime import env, patches

from .legality import NeuronCompileError

AUTOCOPY_ENV = "TORCH_NEURONX_DYNAMO_DISABLE_CPU_AUTOCOPY"


def autocopy_disabled() -> bool:
    """TORCH_NEURONX_DYNAMO_DISABLE_CPU_AUTOCOPY (default off), read at each call/compile."""
    return env.flag(AUTOCOPY_ENV, False)


def autocopy_error(position: int | str, detail: str | None, device) -> NeuronCompileError:
    """The error for a CPU tensor input when autocopy is disabled. ``position`` is the
    input's index (or keyword), ``detail`` what names it (the parameter, Dynamo's source)."""
    if isinstance(position, int):
        label = f"input {position}" + (f" ({detail})" if detail else "")
    else:
        label = f"input '{position}' (keyword argument)"
    return NeuronCompileError(
        f"torch.compile(backend='neuron'): {label} is a CPU tensor, and "
        f"{AUTOCOPY_ENV}=1 forbids copying it to the neuron device. Move it with "
        f".to('{device}') before calling the compiled function."
    )


def copy_to(x: torch.Tensor, device, copies: list) -> torch.Tensor:
    """``x`` copied to ``device``, recorded in ``copies`` for :func:`write_back`."""
    y = x.to(device)
    copies.append((x, y, y._version))
    return y


def write_back(copies) -> None:
    """Copy in-place updates of moved inputs back: ``copies`` holds (CPU original, neuron
    copy, the copy's version counter when made)."""
    for src, dst, version in copies:
        if dst._version != version:
            with torch.no_grad():
                src.copy_(dst)


def _is_cpu_tensor(x) -> bool:
    return isinstance(x, torch.Tensor) and x.device.type == "cpu"


def _first_cpu_input(args, kwargs) -> int | str | None:
    """Index (or keyword) of the first argument holding a CPU tensor (nested too)."""
    for where, a in itertools.chain(enumerate(args), kwargs.items()):
        if any(_is_cpu_tensor(x) for x in tree_leaves(a)):
            return where
    return None


def _parameter_name(fn, index: int) -> str | None:
    try:
        params = [
            p
            for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):  # builtins and some C callables have no signature
        return None
    return params[index].name if index < len(params) else None


def _place(fn, args, kwargs, device):
    """(args, kwargs, copies): the arguments with every CPU tensor copied to ``device``,
    or the error naming the first one when autocopy is disabled."""
    where = _first_cpu_input(args, kwargs)
    if where is None:
        return args, kwargs, []
    if autocopy_disabled():
        name = _parameter_name(fn, where) if isinstance(where, int) else None
        raise autocopy_error(where, f"argument '{name}'" if name else None, device)
    copies: list = []
    args, kwargs = tree_map(
        lambda x: copy_to(x, device, copies) if _is_cpu_tensor(x) else x, (args, kwargs)
    )
    return args, kwargs, copies


def _module_pre_hook(module, args, kwargs):
    orig = getattr(module, "_orig_mod", module)
    first = next(itertools.chain(orig.parameters(), orig.buffers()), None)
    if first is None or first.device.type != "neuron":
        return None  # nothing to place against: CPU inputs reach the backend as graph inputs
    args, kwargs, _ = _place(orig.forward, args, kwargs, first.device)
    return args, kwargs


def _target_device(args, kwargs) -> torch.device:
    for x in tree_leaves((args, kwargs)):
        if isinstance(x, torch.Tensor) and x.device.type == "neuron":
            return x.device
    return torch.device("neuron", torch.neuron.current_device())


def _wrap_function(compiled, fn):
    """Move CPU tensor arguments of a compiled function to neuron before it runs."""

    @functools.wraps(compiled)
    def run_on_neuron(*args, **kwargs):
        if _first_cpu_input(args, kwargs) is None:
            return compiled(*args, **kwargs)
        args, kwargs, copies = _place(fn, args, kwargs, _target_device(args, kwargs))
        out = compiled(*args, **kwargs)
        write_back(copies)
        return out

    return run_on_neuron


def _is_neuron_backend(backend) -> bool:
    if backend is None:
        backend = torch.compiler.get_default_backend()
    if isinstance(backend, str):
        return backend == "neuron"
    return getattr(backend, "__name__", "") == "neuron_backend"


_torch_compile = torch.compile


def static_shapes(kwargs: dict) -> dict:
    """``torch.compile`` arguments for backend="neuron": ``dynamic=False`` when ``dynamic`` is
    unset or None. Shapes are static on Neuron (TorchNeuron forces the same), so Dynamo
    compiles one static graph per input shape and guards on it: calling with shapes A, B, A
    compiles two graphs, and the third call reuses A's. Left at Dynamo's default (None,
    "automatic dynamic"), the second shape would turn the function symbolic and the third
    call would compile A once more through the symbolic graph. ``dynamic=True`` is passed
    on (the backend rejects it), and so is a ``shapes_spec`` (Dynamo accepts it only without
    ``dynamic``)."""
    if kwargs.get("dynamic") is None and kwargs.get("shapes_spec") is None:
        kwargs = {**kwargs, "dynamic": False}
    return kwargs


@functools.wraps(_torch_compile)
def compile(model=None, **kwargs):
    if model is None:  # decorator form: torch.compile(backend="neuron")(fn)
        return lambda m: compile(m, **kwargs)
    if not _is_neuron_backend(kwargs.get("backend")):
        return _torch_compile(model, **kwargs)
    from . import dynamo_dirs

    # with caching_precompile Dynamo loads a precompiled package (a pickle) while wrapping
    with dynamo_dirs.dynamo_region():
        out = _torch_compile(model, **static_shapes(kwargs))
    if isinstance(out, torch.nn.Module):
        out.register_forward_pre_hook(_module_pre_hook, with_kwargs=True)
        return out
    return _wrap_function(out, model)


def install() -> None:
    patches.replace(
        torch,
        "compile",
        compile,
        reason="backend='neuron' copies CPU tensor arguments of compiled modules and functions "
        "to the neuron device before Dynamo traces them (Dynamo rejects an op mixing CPU and "
        "neuron tensors before the backend sees the graph), and compiles with dynamic=False "
        "unless told otherwise (static shapes: one graph per input shape, each compiled once); "
        "other backends are untouched",
    )
