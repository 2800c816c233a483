"""CPU inputs of modules and functions compiled with backend="neuron" (compile layer).

TorchNeuron copies CPU tensors passed to a compiled function to the device. The backend can
only do that for graph inputs that reach it, but an op mixing a CPU argument with neuron
tensors (a CPU batch and a module's neuron parameters, or ``x_cpu @ w_neuron`` in a plain
function) never reaches the backend: Dynamo's own tracing rejects the mix first. So the
callable that ``torch.compile`` returns for backend="neuron" (given explicitly, by the
decorator form, or through ``torch.compiler.set_default_backend``) moves CPU tensor
arguments to the neuron device eagerly, before the compiled region: a forward pre-hook on a
compiled module (target: the module's device), a thin wrapper around a compiled function
(target: the device of its first neuron tensor argument, else the current neuron device;
in-place updates of a moved argument are copied back). With
TORCH_NEURONX_DYNAMO_DISABLE_CPU_AUTOCOPY=1 a CPU tensor argument is an error naming its
position instead. Kept outside the torch_neuronx.compile package so that installing it at
autoload does not import Dynamo.
"""
from __future__ import annotations

import functools
import inspect
import itertools
import os

import torch

_orig_compile = torch.compile


def _autocopy_disabled() -> bool:
    return os.environ.get("TORCH_NEURONX_DYNAMO_DISABLE_CPU_AUTOCOPY", "0").lower() in ("1", "true", "yes")


def _is_neuron_backend(backend) -> bool:
    if backend is None:
        backend = torch.compiler.get_default_backend()
    if isinstance(backend, str):
        return backend == "neuron"
    return getattr(backend, "__name__", "") == "neuron_backend"


def _neuron_available() -> bool:
    return torch._C._get_privateuse1_backend_name() == "neuron"


def _cpu_tensor_positions(args, kwargs):
    """[(label, index-or-name)] of the CPU tensors among the arguments (nested too)."""
    found = []
    for i, a in enumerate(args):
        if any(_is_cpu_tensor(x) for x in torch.utils._pytree.tree_leaves(a)):
            found.append(i)
    for k, a in kwargs.items():
        if any(_is_cpu_tensor(x) for x in torch.utils._pytree.tree_leaves(a)):
            found.append(k)
    return found


def _is_cpu_tensor(x) -> bool:
    return isinstance(x, torch.Tensor) and x.device.type == "cpu"


def _autocopy_error(fn, where, device):
    """The error for a CPU argument when autocopy is disabled, naming its position."""
    from torch_neuronx.compile.legality import NeuronCompileError

    if isinstance(where, int):
        name = None
        try:
            params = [
                p for p in inspect.signature(fn).parameters.values()
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            ]
            if where < len(params):
                name = params[where].name
        except (TypeError, ValueError):
            pass
        label = f"input {where}" + (f" (argument '{name}')" if name else "")
    else:
        label = f"input '{where}' (keyword argument)"
    return NeuronCompileError(
        f"torch.compile(backend='neuron'): {label} is a CPU tensor, and "
        "TORCH_NEURONX_DYNAMO_DISABLE_CPU_AUTOCOPY=1 forbids copying it to the neuron "
        f"device. Move it with .to('{device}') before calling the compiled function."
    )


def _move_cpu_inputs(module, args, kwargs):
    orig = getattr(module, "_orig_mod", module)
    first = next(itertools.chain(orig.parameters(), orig.buffers()), None)
    if first is None or first.device.type != "neuron":
        return None
    dev = first.device
    if _autocopy_disabled():
        where = _cpu_tensor_positions(args, kwargs)
        if where:
            raise _autocopy_error(orig.forward, where[0], dev)
        return None

    def move(x):
        return x.to(dev) if _is_cpu_tensor(x) else x

    return torch.utils._pytree.tree_map(move, (args, kwargs))


def write_back(copies) -> None:
    """Copy in-place updates of moved arguments back: ``copies`` holds (CPU original, neuron
    copy, the copy's version counter when made)."""
    for src, dst, version in copies:
        if dst._version != version:
            with torch.no_grad():
                src.copy_(dst)


def _target_device(args, kwargs):
    for x in torch.utils._pytree.tree_leaves((args, kwargs)):
        if isinstance(x, torch.Tensor) and x.device.type == "neuron":
            return x.device
    return torch.device("neuron", torch.neuron.current_device())


def _wrap_function(compiled, fn):
    """Move CPU tensor arguments of a compiled function to neuron before it runs."""

    @functools.wraps(compiled)
    def run_on_neuron(*args, **kwargs):
        if not _neuron_available():
            return compiled(*args, **kwargs)
        where = _cpu_tensor_positions(args, kwargs)
        if not where:
            return compiled(*args, **kwargs)
        dev = _target_device(args, kwargs)
        if _autocopy_disabled():
            raise _autocopy_error(fn, where[0], dev)
        copies = []

        def move(x):
            if not _is_cpu_tensor(x):
                return x
            y = x.to(dev)
            copies.append((x, y, y._version))
            return y

        args, kwargs = torch.utils._pytree.tree_map(move, (args, kwargs))
        out = compiled(*args, **kwargs)
        write_back(copies)
        return out

    return run_on_neuron


@functools.wraps(_orig_compile)
def compile(model=None, **kwargs):
    if model is None:  # decorator form: torch.compile(backend="neuron")(fn)
        return lambda m: compile(m, **kwargs)
    out = _orig_compile(model, **kwargs)
    if not _is_neuron_backend(kwargs.get("backend")):
        return out
    if isinstance(out, torch.nn.Module):
        out.register_forward_pre_hook(_move_cpu_inputs, with_kwargs=True)
        return out
    return _wrap_function(out, model)


def install() -> None:
    if torch.compile is not compile:
        torch.compile = compile
