"""Backward over neuron tensors runs on the calling thread (torch_neuronx/eager/autograd_threads).

PyTorch would hand it to a per-device autograd worker thread; the emulated core computes on
the host synchronously, so that handoff only costs time and, at interpreter exit, could abort
short scripts. TORCH_NEURONX_AUTOGRAD_DEVICE_THREADS=1 restores PyTorch's default.
"""

from __future__ import annotations

import threading

import torch
import torch.utils.checkpoint

from torch_neuronx.eager.autograd_threads import ENV
from torch_neuronx.testing import child

# In a fresh process (the choice is made at import): does backward run its hook on the
# calling thread, and is autograd's multithreading on?
_PROBE = """
    import threading, torch
    main = threading.get_ident()
    seen = []
    x = torch.ones(4, device="neuron", requires_grad=True)
    x.register_hook(lambda g: seen.append(threading.get_ident()))
    (x * 3).sum().backward()
    assert torch.equal(x.grad.cpu(), torch.full((4,), 3.0))
    assert len(seen) == 1, seen
    assert torch.autograd.is_multithreading_enabled() is {multithreading}
    assert (seen[0] == main) is {same_thread}, "the hook ran on the wrong thread"
"""


# PyTorch's per-device autograd worker threads can abort interpreter teardown ("terminate
# called without an active exception", exit status -6) -- one reason the package turns them
# off. With them on, the probe ends before teardown, so it checks only the thread choice.
_SKIP_TEARDOWN = """
    import os, sys
    sys.stdout.flush()
    os._exit(0)
"""


def _probe(multithreading: bool, same_thread: bool):
    code = _PROBE.format(multithreading=multithreading, same_thread=same_thread)
    child.run_ok(code + (_SKIP_TEARDOWN if multithreading else ""))


def test_backward_hooks_run_on_the_calling_thread():
    main = threading.get_ident()
    seen = []
    x = torch.randn(5, device="neuron", requires_grad=True)
    x.register_hook(lambda g: seen.append(threading.get_ident()))
    (x.sin() * 2).sum().backward()
    assert seen == [main]
    torch.testing.assert_close(x.grad.cpu(), 2 * x.detach().cpu().cos(), rtol=0, atol=0)
    assert not torch.autograd.is_multithreading_enabled()


def test_reentrant_checkpoint_backward_works_inline():
    # reentrant checkpointing calls backward() inside backward(): must still work inline
    torch.manual_seed(0)
    lin = torch.nn.Linear(8, 8)
    x = torch.randn(4, 8)
    ref = torch.utils.checkpoint.checkpoint(lin, x.requires_grad_(), use_reentrant=True).sum()
    ref.backward()
    lin_n = torch.nn.Linear(8, 8).to("neuron")
    lin_n.load_state_dict(lin.state_dict())
    xn = x.detach().to("neuron").requires_grad_()
    out = torch.utils.checkpoint.checkpoint(lin_n, xn, use_reentrant=True).sum()
    out.backward()
    torch.testing.assert_close(xn.grad.cpu(), x.grad, rtol=0, atol=0)
    torch.testing.assert_close(lin_n.weight.grad.cpu(), lin.weight.grad, rtol=0, atol=0)


def test_fresh_process_defaults_to_the_calling_thread(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)  # the child inherits this environment
    _probe(multithreading=False, same_thread=True)


def test_opt_out_restores_pytorch_device_threads(monkeypatch):
    # the variable is the documented way back to PyTorch's per-device worker threads
    monkeypatch.setenv(ENV, "1")
    _probe(multithreading=True, same_thread=False)
