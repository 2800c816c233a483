"""Faults in the driver (issue 13, point 7): deleters never terminate the process, the
topology is fixed once the runtime is up, getDeviceFromPtr names the owning device, and
torch.neuron._is_in_bad_fork() reports the driver's fork state."""

from __future__ import annotations

import pytest
import torch

from torch_neuronx import _C
from torch_neuronx.testing import child


def test_an_error_inside_a_memory_deleter_does_not_terminate():
    # The deleter is handed a pointer the allocator never allocated: the error is reported on
    # stderr, the memory is leaked, and the process carries on (before: std::terminate).
    code = """
        import torch
        from torch_neuronx import _C
        x = torch.ones(4, device='neuron')
        _C._debug_free_unknown_pointer()
        assert bool((x + 1 == 2).all())
        print('still alive')
        """
    r = child.run(code)
    assert r.returncode == 0, r.stderr[-4000:]
    assert "still alive" in r.stdout
    assert "error while freeing neuron memory" in r.stderr
    assert "not allocated by the neuron allocator" in r.stderr


def test_device_count_cannot_change_after_init():
    torch.ones(1, device="neuron")  # the runtime is up
    n = torch.neuron.device_count()
    cap = torch.neuron.get_device_properties(0).total_memory
    with pytest.raises(RuntimeError, match="cannot change after the runtime is initialised"):
        _C._configure(n + 1, cap, "trn2.3xlarge")
    assert torch.neuron.device_count() == n


def test_reconfiguring_with_the_same_topology_is_accepted():
    from torch_neuronx.runtime import topology

    torch.ones(1, device="neuron")
    topo = topology.current()
    _C._configure(topo.device_count, topo.hbm_per_core, topo.profile.name)  # idempotent
    with pytest.raises(RuntimeError, match="cannot change"):
        _C._configure(topo.device_count, topo.hbm_per_core + 1, topo.profile.name)
    assert torch.neuron.get_device_properties(0).total_memory == topo.hbm_per_core


def test_get_device_from_ptr_names_the_owning_device():
    assert torch.neuron.device_count() >= 2
    with torch.neuron.device(0):
        on1 = torch.arange(1000, dtype=torch.float32, device="neuron:1")
        out1 = on1 * 2  # an op's output (adopted host workspace)
        big1 = torch.empty(3 << 20, dtype=torch.uint8, device="neuron:1")
        on0 = torch.ones(10, device="neuron:0")
        for t, want in ((on1, 1), (out1, 1), (big1, 1), (on0, 0)):
            assert _C._device_from_ptr(t.data_ptr()) == torch.device("neuron", want)
            interior = t.data_ptr() + t.element_size() * (t.numel() // 2)
            assert _C._device_from_ptr(interior) == torch.device("neuron", want)
    cpu = torch.ones(10)
    with pytest.raises(RuntimeError, match="not in the memory of any neuron device"):
        _C._device_from_ptr(cpu.data_ptr())


def test_is_in_bad_fork_reports_the_driver_state(py):
    py("""
        import multiprocessing as mp, torch
        assert torch.neuron._is_in_bad_fork() is False
        ctx = mp.get_context('fork')
        def child(q):
            q.put(torch.neuron._is_in_bad_fork())
        def run():
            q = ctx.Queue()
            p = ctx.Process(target=child, args=(q,))
            p.start(); p.join(60)
            return q.get(timeout=10)
        assert run() is False          # forked before the device was initialised: usable
        torch.ones(1, device='neuron')  # initialises the runtime
        assert run() is True           # forked after: the child cannot use the device
        assert torch.neuron._is_in_bad_fork() is False
        """)
