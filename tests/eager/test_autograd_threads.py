"""Backward over neuron tensors runs on the calling thread (torch_neuronx/eager/autograd_threads.py).

PyTorch would hand it to a per-device autograd worker thread; the emulated core computes on
the host synchronously, so that handoff only costs time and, at interpreter exit, could abort
short scripts. TORCH_NEURONX_AUTOGRAD_DEVICE_THREADS=1 restores PyTorch's default.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading

import torch
import torch.utils.checkpoint

from torch_neuronx.eager.autograd_threads import ENV

# Records the thread each backward hook runs on; prints "same" or "other" per hook.
_PROBE = textwrap.dedent("""
    import threading, torch
    main = threading.get_ident()
    seen = []
    x = torch.ones(4, device="neuron", requires_grad=True)
    x.register_hook(lambda g: seen.append(threading.get_ident()))
    (x * 3).sum().backward()
    print("multithreading", torch.autograd.is_multithreading_enabled())
    print("hook", "same" if seen == [main] else "other")
    assert torch.equal(x.grad.cpu(), torch.full((4,), 3.0))
""")


def _probe(env_extra):
    env = dict(os.environ)
    env.pop(ENV, None)
    env.update(env_extra)
    out = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_backward_hooks_run_on_the_calling_thread():
    main = threading.get_ident()
    seen = []
    x = torch.randn(5, device="neuron", requires_grad=True)
    x.register_hook(lambda g: seen.append(threading.get_ident()))
    (x.sin() * 2).sum().backward()
    assert seen == [main]
    torch.testing.assert_close(x.grad.cpu(), 2 * x.detach().cpu().cos())
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
    torch.testing.assert_close(xn.grad.cpu(), x.grad)
    torch.testing.assert_close(lin_n.weight.grad.cpu(), lin.weight.grad)


def test_fresh_process_defaults_to_the_calling_thread():
    out = _probe({})
    assert "multithreading False" in out and "hook same" in out, out


def test_opt_out_restores_pytorch_device_threads():
    # the variable is the documented way back to PyTorch's per-device worker threads
    out = _probe({ENV: "1"})
    assert "multithreading True" in out and "hook other" in out, out
