"""Which convolution backend a neuron convolution uses, as PyTorch's Python side asks it.

The driver runs ``convolution`` and ``convolution_backward`` whole on the core: CPU's
composite picks CPU's backend (oneDNN, or the slow 2d kernels) on the host view, and that
backend decides the memory format of the outputs (a channels_last input gives a
channels_last output and gradient). ``torch._C._select_conv_backend`` answers
``Overrideable`` for any PrivateUse1 tensor, and FakeTensor's convolution rule
(torch/_subclasses/fake_impls.py ``conv``) derives the output memory format from that answer:
contiguous. Traced graphs (torch.compile, export) then disagreed with eager about the strides
of every convolution on a channels_last model, and a ``view`` that AOTAutograd's
decompositions put after a gradient that is contiguous on fake neuron tensors failed once
the graph ran on host tensors (the max-pool backward of a ResNet). The replacement answers
for a neuron tensor what CPU selects for the same arguments, so fake tensors carry eager's
strides.

FakeTensor's rule then asks ``torch._C._conv_determine_backend_memory_format`` for that
backend's output format, and its answer for the slow 2d kernels (which CPU selects for an
unstrided 1x1 convolution of a batch under 16 when it runs on one thread) tests that the
input is a CPU tensor: a neuron fake got contiguous where eager gives channels_last (timm's
efficientformerv2_s0 under ``OMP_NUM_THREADS=1``: its compiled graph then decomposed
differently from CPU Inductor's, an extra channels_last copy after an upsample, and its
gradients differed from CPU Inductor's by 1.7e-3). It gets the same replacement.
"""

from __future__ import annotations

import torch

from torch_neuronx.runtime import patches

_original = None
_original_format = None


def _cpu_like(x, mode):
    if isinstance(x, torch.Tensor) and x.device.type == "neuron":
        with mode:
            return torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device="cpu")
    return x


def _as_cpu(original, args, kwargs):
    """`original` (a torch._C function of convolution arguments) answered for CPU tensors of
    the neuron tensors' sizes and strides."""
    tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
    if not any(t.device.type == "neuron" for t in tensors):
        return original(*args, **kwargs)
    from torch._subclasses.fake_tensor import FakeTensorMode

    # CPU fakes with the same sizes and strides (no memory): the fake mode of the inputs
    # when they are fake (we are inside its convolution rule), a fresh one otherwise
    mode = next((t.fake_mode for t in tensors if hasattr(t, "fake_mode")), None)
    mode = mode if mode is not None else FakeTensorMode(allow_non_fake_inputs=True)
    args = tuple(_cpu_like(a, mode) for a in args)
    kwargs = {k: _cpu_like(v, mode) for k, v in kwargs.items()}
    return original(*args, **kwargs)


def _select_conv_backend(*args, **kwargs):
    return _as_cpu(_original, args, kwargs)


def _conv_determine_backend_memory_format(*args, **kwargs):
    return _as_cpu(_original_format, args, kwargs)


def install() -> None:
    global _original, _original_format
    _original = patches.replace(
        torch._C,
        "_select_conv_backend",
        _select_conv_backend,
        reason="a neuron convolution runs CPU's convolution on the host view: answer CPU's "
        "backend, so FakeTensor's convolution rule gives the memory format eager gives "
        "(channels_last stays channels_last in compiled graphs)",
    )
    _original_format = patches.replace(
        torch._C,
        "_conv_determine_backend_memory_format",
        _conv_determine_backend_memory_format,
        reason="its answer for CPU's slow 2d convolution tests for a CPU input: answer as for "
        "the host view, so FakeTensor gives a neuron convolution eager's memory format",
    )
