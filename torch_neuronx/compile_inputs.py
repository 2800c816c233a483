"""CPU inputs of modules compiled with backend="neuron" (part of the compile layer).

TorchNeuron copies CPU tensors passed to a compiled function to the device. The backend does
that for graph inputs, but a CPU batch fed to a module whose parameters live on neuron never
reaches the backend: Dynamo's own tracing rejects the CPU/neuron mix first. So for modules
compiled with backend="neuron", a forward pre-hook on the compiled module (it runs eagerly,
before the compiled region) moves CPU tensor arguments to the module's device. With
TORCH_NEURONX_DYNAMO_DISABLE_CPU_AUTOCOPY=1 nothing is moved. Kept outside the
torch_neuronx.compile package so that installing it at autoload does not import Dynamo.
"""
from __future__ import annotations

import functools
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


def _move_cpu_inputs(module, args, kwargs):
    if _autocopy_disabled():
        return None
    orig = getattr(module, "_orig_mod", module)
    first = next(itertools.chain(orig.parameters(), orig.buffers()), None)
    if first is None or first.device.type != "neuron":
        return None
    dev = first.device

    def move(x):
        return x.to(dev) if isinstance(x, torch.Tensor) and x.device.type == "cpu" else x

    return torch.utils._pytree.tree_map(move, (args, kwargs))


@functools.wraps(_orig_compile)
def compile(model=None, **kwargs):
    if model is None:  # decorator form: torch.compile(backend="neuron")(fn)
        return lambda m: compile(m, **kwargs)
    out = _orig_compile(model, **kwargs)
    if isinstance(out, torch.nn.Module) and _is_neuron_backend(kwargs.get("backend")):
        out.register_forward_pre_hook(_move_cpu_inputs, with_kwargs=True)
    return out


def install() -> None:
    if torch.compile is not compile:
        torch.compile = compile
