"""The simulated NeuronCore follows the emulated instance: Trn3 (NeuronCore-v4) has a larger
SBUF, wider matmuls, bfloat16 PSUM output and nisa.exponential. Run in a fresh process (the
instance profile is fixed at startup)."""

import dataclasses
import re

import pytest


def test_trn3_profile_is_neuroncore_v4(py):
    py(
        """
        import torch
        from torch_neuronx import nki
        import torch_neuronx.nki.isa as nisa
        import torch_neuronx.nki.language as nl

        assert nisa.get_nc_version() == nisa.nc_version.gen4
        assert nl.tile_size.total_available_sbuf_size == 256 * 1024

        @nki.jit
        def k(x):
            s = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.sbuf)
            m = nl.ndarray((128, 2048), dtype=nl.bfloat16, buffer=nl.sbuf)
            nisa.dma_copy(dst=s, src=x[:, 0:128])
            nisa.dma_copy(dst=m, src=x)
            p = nl.ndarray((128, 2048), dtype=nl.bfloat16, buffer=nl.psum)  # 4 KiB: 2 banks
            nisa.nc_matmul(dst=p, stationary=s, moving=m)  # moving 2048 > 512: v4 only
            e = nl.ndarray((128, 2048), dtype=nl.float32, buffer=nl.sbuf)
            nisa.exponential(dst=e, src=p, max_value=0.0)
            out = nl.ndarray((128, 2048), dtype=nl.float32, buffer=nl.shared_hbm)
            nisa.dma_copy(dst=out, src=e)
            return out

        x = torch.randn(128, 2048).div(16).to(torch.bfloat16)
        out = k(x.to("neuron")).cpu()
        ref = torch.exp((x[:, :128].float().t() @ x.float()).to(torch.bfloat16).float())
        torch.testing.assert_close(out, ref, rtol=2e-2, atol=2e-2)
        assert k.last_report.target == "Trn3 NeuronCore-v4"
    """,
        env={"TORCH_NEURONX_EMULATED_INSTANCE": "trn3.3xlarge"},
    )


def test_the_nki_simulator_the_allocator_and_the_perf_model_read_one_object(py):
    # one hardware description per process: topology.current().target; every layer reads it
    py(
        """
        import torch, torch_neuronx
        from torch_neuronx import nki
        import torch_neuronx.nki.isa as nisa
        import torch_neuronx.nki.language as nl
        from torch_neuronx.nki import cost, target as nki_target
        from torch_neuronx.perf import target as perf_target
        from torch_neuronx.runtime import topology

        tgt = topology.current().target
        core = tgt.core
        assert (tgt.instance.name, core.generation, core.lnc) == ("trn3.3xlarge", "trn3", 2)
        assert perf_target.current() is tgt  # the performance model
        assert nki_target.current().core is core  # the NKI simulator's tile rules and sizes
        assert nisa.get_nc_version() == nisa.nc_version.gen4 and core.core.version == 4

        # the allocator: its capacity is the core's HBM
        cap = core.hbm_capacity
        assert torch.neuron.get_device_properties(0).total_memory == cap == 36 << 30
        try:
            torch.empty(cap + (1 << 20), dtype=torch.uint8, device="neuron")
        except torch.OutOfMemoryError as e:
            assert f"HBM capacity {cap / 2**20:.2f} MiB" in str(e), str(e)
        else:
            raise AssertionError("an allocation over the core's HBM did not raise")

        # the NKI cost model schedules on the same core (generation and LNC together)
        seen = []
        init = cost.Timeline.__init__
        cost.Timeline.__init__ = lambda self, c: (seen.append(c), init(self, c))[1]

        @nki.jit
        def k(x):
            s = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(dst=s, src=x)
            out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
            nisa.dma_copy(dst=out, src=s)
            return out

        x = torch.randn(128, 512)
        with torch_neuronx.perf.measure() as m:
            torch.testing.assert_close(k(x.to("neuron")).cpu(), x)
        assert seen and all(c is core for c in seen), seen
        assert k.last_report.target == "Trn3 NeuronCore-v4"
        assert m.summary()["generation"] == "trn3"
    """,
        env={"TORCH_NEURONX_EMULATED_INSTANCE": "trn3.3xlarge"},
    )


def test_a_mistyped_instance_is_an_error_not_a_trn2_fallback(monkeypatch):
    # The NKI simulator used to cost trn2 (and LNC=1) when the profile was unreadable; now it
    # raises the topology's error, which names the valid instances.
    import torch_neuronx.nki.isa as nisa
    import torch_neuronx.nki.language as nl
    from torch_neuronx.nki import target
    from torch_neuronx.perf import target as perf_target
    from torch_neuronx.runtime import topology

    monkeypatch.setattr(topology, "_current", None)  # restored after the test
    monkeypatch.setenv("TORCH_NEURONX_EMULATED_INSTANCE", "trn3.3xlage")
    valid = "accepted values: " + ", ".join(topology.emulated_instance_names())
    for read in (
        target.current,
        lambda: nl.tile_size.pmax,
        nisa.get_nc_version,
        perf_target.current,
    ):
        with pytest.raises(ValueError, match=re.escape(valid)):
            read()


def test_adding_a_generation_is_one_table_entry(monkeypatch):
    # A new generation is one CHIPS entry (its chip and core); an instance of it to emulate or
    # price is one INSTANCES entry. Nothing else changes, and every view sees both.
    import torch

    from torch_neuronx import nki
    from torch_neuronx.evaluate import profiles
    from torch_neuronx.nki import target
    from torch_neuronx.perf import estimate
    from torch_neuronx.perf import target as perf_target
    from torch_neuronx.runtime import hardware as hw
    from torch_neuronx.runtime import topology

    gib = 1 << 30
    monkeypatch.setitem(
        hw.CHIPS,
        "trn4",
        dataclasses.replace(
            hw.CHIPS["trn3"],
            generation="trn4",
            chip_name="Trainium4",
            physical_cores=16,
            hbm_capacity=hw.assume(288 * gib, "B", "a test entry"),
        ),
    )
    monkeypatch.setitem(
        hw.INSTANCES,
        "trn4.3xlarge",
        dataclasses.replace(hw.INSTANCES["trn3.3xlarge"], name="trn4.3xlarge", generation="trn4"),
    )

    # the hardware table
    assert any(r[0] == "Trainium4 physical cores" and r[1] == "16" for r in hw.table_rows("trn4"))
    # the runtime: an emulated instance, with its core counts and the allocator's capacity
    topo = topology.from_environment({"TORCH_NEURONX_EMULATED_INSTANCE": "trn4.3xlarge"})
    assert (topo.profile.generation, topo.profile.core_name) == ("trn4", "NeuronCore-v4")
    assert (topo.device_count, topo.hbm_per_core) == (8, 36 * gib)
    one = topology.from_environment(
        {"TORCH_NEURONX_EMULATED_INSTANCE": "trn4.3xlarge", "NEURON_LOGICAL_NC_CONFIG": "1"}
    )
    assert (one.device_count, one.hbm_per_core) == (16, 18 * gib)
    # the performance model
    tgt = perf_target.for_instance("trn4.3xlarge")
    assert (tgt.generation, tgt.cores_per_instance) == ("trn4", 8)
    assert estimate.estimate_op("mm", [(512, 512)] * 2, torch.bfloat16, tgt).duration > 0
    # the report's profiles: a target plus a price
    profs = profiles.profiles(["trn4.3xlarge"])
    assert [(p.key, p.cores, p.hbm_per_core) for p in profs] == [
        ("trn4.3xlarge/lnc1", 16, 18 * gib),
        ("trn4.3xlarge/lnc2", 8, 36 * gib),
    ]
    assert profs[1].target.core.chip is hw.CHIPS["trn4"]
    # the NKI simulator, with the process emulating the new instance
    monkeypatch.setattr(topology, "_current", topo)
    assert perf_target.current() is topo.target and target.current().core is topo.core
    assert target.current().label == "Trn4 NeuronCore-v4"

    import torch_neuronx.nki.isa as nisa
    import torch_neuronx.nki.language as nl

    @nki.jit
    def k(x):
        s = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=s, src=x)
        out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=s)
        return out

    x = torch.randn(128, 512)
    torch.testing.assert_close(k(x.to("neuron")).cpu(), x)
    assert k.last_report.target == "Trn4 NeuronCore-v4"
