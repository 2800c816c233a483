"""Issue 28, item 3: a compiled graph's intermediates are device memory. They come from the
device's memory itself (runtime/host.py ``device_allocations(as_device_memory=True)``,
compile/executable.py), so capacity, out-of-memory errors and the peak hold for compiled code
as for eager -- a NEFF's intermediates live in HBM.

The scenario runs in a child process: the core's capacity is fixed when the device starts.
"""

from __future__ import annotations

import os

from torch_neuronx.testing import child

MEMORY = """
import torch

def gram_sum(x):
    return (x @ x.T).sum()

f = torch.compile(gram_sum, backend="neuron", dynamic=False)
dev = torch.device("neuron")
with torch.no_grad():
    # 4096 x 4096 float32 intermediate: 64 MiB, freed before the graph returns
    x = torch.randn(4096, 8).to(dev)
    torch.neuron.synchronize()
    base = torch.neuron.memory_allocated()
    torch.neuron.reset_peak_memory_stats()
    out = f(x)
    torch.testing.assert_close(out.cpu(), gram_sum(x.cpu()), rtol=1e-3, atol=1e-1)
    peak = torch.neuron.max_memory_allocated() - base
    assert peak >= 64 << 20, f"peak above the inputs {peak} < 64 MiB"
    del out
    assert torch.neuron.memory_allocated() == base, "intermediates leaked"

    # 16384 x 16384 float32: 1 GiB, more than the 512 MiB of the core
    big = torch.randn(16384, 8).to(dev)
    before = torch.neuron.memory_allocated()
    try:
        f(big)
    except torch.OutOfMemoryError as e:
        assert "neuron" in str(e), e
    else:
        raise AssertionError("a 1 GiB intermediate ran on a 512 MiB core")
    assert torch.neuron.memory_allocated() == before, "a failed graph kept its memory"
    stats = torch.neuron.memory_stats()
    assert stats["num_ooms"] >= 1, stats["num_ooms"]
    # the device still works, for the same compiled function as for eager
    torch.testing.assert_close(f(x).cpu(), gram_sum(x.cpu()), rtol=1e-3, atol=1e-1)
print("OK")
"""


def test_intermediates_are_device_memory(tmp_path):
    env = {
        "TORCH_NEURONX_HBM_PER_CORE": "512MiB",
        "TORCH_NEURONX_NEFF_CACHE_DIR": str(tmp_path / "neff"),
    }
    os.makedirs(tmp_path / "neff", mode=0o700)
    assert "OK" in child.run_ok(MEMORY, env, timeout=600)
