"""Emulated topology: profiles, LNC, visible cores, capacities (issue 2, point 3)."""

import pytest

from torch_neuronx.runtime import topology

GiB = 1 << 30


def _env(**kw):
    return {k: str(v) for k, v in kw.items()}


def test_default_profile():
    t = topology.from_environment({})
    assert t.profile.name == "trn2.3xlarge" and t.lnc == 2
    assert t.device_count == 4 and t.hbm_per_core == 24 * GiB


@pytest.mark.parametrize(
    "env,count,hbm",
    [
        (dict(NEURON_LOGICAL_NC_CONFIG=1), 8, 12 * GiB),
        (dict(TORCH_NEURONX_EMULATED_INSTANCE="trn2.48xlarge"), 64, 24 * GiB),
        (
            dict(TORCH_NEURONX_EMULATED_INSTANCE="trn2.48xlarge", NEURON_LOGICAL_NC_CONFIG=1),
            128,
            12 * GiB,
        ),
        (dict(TORCH_NEURONX_EMULATED_INSTANCE="trn3.48xlarge"), 64, 36 * GiB),
        (dict(TORCH_NEURONX_EMULATED_INSTANCE="trn3.3xlarge"), 4, 36 * GiB),
        (dict(NEURON_RT_VISIBLE_CORES="0-1"), 2, 24 * GiB),
        (dict(NEURON_RT_VISIBLE_CORES="2,3"), 2, 24 * GiB),
        (dict(NEURON_RT_NUM_CORES=3), 3, 24 * GiB),
        (dict(TORCH_NEURONX_HBM_PER_CORE="512MiB"), 4, 512 << 20),
    ],
)
def test_profiles_and_environment(env, count, hbm):
    t = topology.from_environment(_env(**env))
    assert (t.device_count, t.hbm_per_core) == (count, hbm)


def test_the_topology_carries_the_hardware_tables_instance_and_logical_core():
    from torch_neuronx.runtime import hardware

    t = topology.from_environment({"TORCH_NEURONX_EMULATED_INSTANCE": "trn3.48xlarge"})
    assert isinstance(t.target, hardware.Target)
    assert t.instance is hardware.INSTANCES["trn3.48xlarge"]
    assert t.core.chip is hardware.CHIPS["trn3"]
    assert (t.lnc, t.core.generation, t.profile.generation) == (2, "trn3", "trn3")
    assert t.profile.core_name == "NeuronCore-v4"  # a core name, not a generation
    assert t.logical_cores_total == t.target.cores_per_instance == 64
    assert t.hbm_per_core == t.core.hbm_capacity  # the allocator's capacity is the core's HBM


def test_a_mistyped_instance_names_the_valid_ones():
    with pytest.raises(ValueError) as e:
        topology.from_environment({"TORCH_NEURONX_EMULATED_INSTANCE": "trn3.3xlage"})
    assert all(name in str(e.value) for name in topology.emulated_instance_names())


def test_visible_cores_map_to_device_indices():
    t = topology.from_environment({"NEURON_RT_VISIBLE_CORES": "2,3"})
    assert t.visible_cores == (2, 3)


@pytest.mark.parametrize(
    "env,msg",
    [
        ({"TORCH_NEURONX_EMULATED_INSTANCE": "p5.48xlarge"}, "accepted values: trn2.3xlarge, "),
        ({"NEURON_LOGICAL_NC_CONFIG": "3"}, "accepted values: 1, 2"),
        ({"NEURON_RT_VISIBLE_CORES": "0-9"}, "names core 4, which this instance"),
        ({"TORCH_NEURONX_HBM_PER_CORE": "lots"}, "accepted values: a size in bytes"),
    ],
)
def test_bad_environment_is_a_clear_error(env, msg):
    with pytest.raises(ValueError, match=msg):
        topology.from_environment(env)


def test_environment_reaches_the_device(py):
    py(
        f"""
        import torch
        p = torch.neuron.get_device_properties(1)
        assert torch.neuron.device_count() == 4
        assert p.total_memory == {12 * GiB}, p.total_memory
        assert p.profile == "trn2.3xlarge", p.profile
        assert p.logical_core_id == 5, p.logical_core_id  # visible cores 4-7: device 1 is core 5
        """,
        env={"NEURON_LOGICAL_NC_CONFIG": "1", "NEURON_RT_VISIBLE_CORES": "4-7"},
    )


def test_host_ram_used_only_as_allocated(py):
    # A 64-core profile with 24 GiB each must not reserve 1.5 TiB of host memory up front.
    py(
        """
        import resource, torch
        x = torch.ones(10, device='neuron:63')
        assert torch.neuron.device_count() == 64
        assert torch.neuron.memory_reserved(63) == 2 << 20  # one small-pool segment
        max_rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        assert max_rss_kib < 4 * 2**20, f"peak RSS {max_rss_kib} KiB >= 4 GiB"
        """,
        env={"TORCH_NEURONX_EMULATED_INSTANCE": "trn2.48xlarge"},
    )
