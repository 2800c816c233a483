"""Backward passes over neuron tensors run on the thread that calls backward(), as for CPU.

PyTorch's autograd engine gives every accelerator device a worker thread of its own (one per
visible device: 4 on the default profile, 64 on trn2.48xlarge) and hands each backward pass to
it. For CUDA that overlaps host and device work; the emulated NeuronCore computes on the host
synchronously, so the handoff buys nothing and costs a cross-thread wake-up per backward
(~35-50 us on the 2-core CI machine, 10-20% of a small training step). Worse, those threads
take the GIL once when they start; a short script that ends before one of them got it aborts
at interpreter exit with "terminate called without an active exception" (the thread is
killed by Python's finalization inside a C++ frame).

So at import the importing thread turns off the engine's device threads (PyTorch's own
switch, torch.autograd.set_multithreading_enabled(False), a thread-local setting), and
TORCH_NEURONX_AUTOGRAD_DEVICE_THREADS=1 keeps PyTorch's default. Other threads that call
backward keep the default unless they opt in the same way. See docs/decisions.md.
"""

from __future__ import annotations

import torch

from torch_neuronx.runtime import env

ENV = "TORCH_NEURONX_AUTOGRAD_DEVICE_THREADS"


def install() -> None:
    if not env.flag(ENV, False):
        torch._C._set_multithreading_enabled(False)
