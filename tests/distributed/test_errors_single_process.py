"""Clear errors for neuron tensors on a group without the neuron backend (single process).

A gloo-only group has no backend for the neuron device; the neuron kernels of the c10d ops
must say so and say what to do instead. The child process asserts (a failure shows its
traceback).
"""

import os
import subprocess
import sys
import textwrap

from _launch import free_port

_SCRIPT = textwrap.dedent("""
    import torch, torch.distributed as dist
    dist.init_process_group("gloo", rank=0, world_size=1)
    t = torch.ones(4, device="neuron")
    for name, call in [("all_reduce", lambda: dist.all_reduce(t)),
                       ("reduce", lambda: dist.reduce(t, dst=0)),
                       ("all_gather", lambda: dist.all_gather([torch.empty_like(t)], t))]:
        try:
            call()
        except RuntimeError as e:
            assert "No backend type associated with device type neuron" in str(e), (name, e)
            assert "init_process_group('neuron')" in str(e), (name, e)
        else:
            raise AssertionError(f"{name} on a gloo-only group raised no error")
    dist.destroy_process_group()
""")


def test_neuron_tensor_on_gloo_only_group_is_a_clear_error():
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    out = subprocess.run(
        [sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
