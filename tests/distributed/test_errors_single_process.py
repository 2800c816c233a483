"""Clear errors for neuron tensors on a group without the neuron backend (single process).

A gloo-only group has no backend for the neuron device; both the C++ kernels of the hot ops
and the Python kernels of the others must say so and say what to do instead.
"""
import os
import subprocess
import sys
import textwrap

import pytest

from _launch import free_port

_SCRIPT = textwrap.dedent("""
    import os, torch, torch.distributed as dist
    dist.init_process_group("gloo", rank=0, world_size=1)
    t = torch.ones(4, device="neuron")
    for name, call in [("all_reduce", lambda: dist.all_reduce(t)),
                       ("reduce", lambda: dist.reduce(t, dst=0))]:
        try:
            call()
        except RuntimeError as e:
            print(name, "ERROR", e)
        else:
            print(name, "NO ERROR")
    dist.destroy_process_group()
""")


@pytest.mark.parametrize("fast_path", ["1", "0"])
def test_neuron_tensor_on_gloo_only_group_is_a_clear_error(fast_path):
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
               TORCH_NEURONX_DIST_FAST_PATH=fast_path)
    out = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    for name in ("all_reduce", "reduce"):  # C++ kernel (fast path) and a Python kernel
        line = next(l for l in out.stdout.splitlines() if l.startswith(name + " "))
        assert "ERROR" in line and "NO ERROR" not in line, line
        assert "init_process_group('neuron')" in line, line
