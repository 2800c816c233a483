"""The hardware table (issue 10, point 1): every figure carries its source or is an
assumption with reasoning; the emulated profiles read it; Trn3's figures apply under Trn3."""

import dataclasses

import pytest

from torch_neuronx.runtime import hardware as hw
from torch_neuronx.runtime import topology


def _figs(obj):
    for f in dataclasses.fields(obj):
        v = getattr(obj, f.name)
        if isinstance(v, hw.Fig):
            yield f.name, v
        elif isinstance(v, dict):
            for k, x in v.items():
                if isinstance(x, hw.Fig):
                    yield f"{f.name}[{k}]", x


def _all_figs():
    for gen, chip in hw.CHIPS.items():
        yield from ((f"{gen}.{n}", f) for n, f in _figs(chip))
        yield from ((f"{gen}.core.{n}", f) for n, f in _figs(chip.core))
    for name, inst in hw.INSTANCES.items():
        yield from ((f"{name}.{n}", f) for n, f in _figs(inst))


@pytest.mark.parametrize("name,fig", list(_all_figs()), ids=[n for n, _ in _all_figs()])
def test_every_figure_has_provenance(name, fig):
    assert fig.kind in ("published", "derived", "third-party", "assumption")
    if fig.kind in ("published", "derived"):
        assert fig.urls, f"{name}: a {fig.kind} figure names its source"
    if fig.kind in ("derived", "assumption") or fig.value is None:
        assert fig.note, (
            f"{name}: derived figures show their arithmetic, assumptions their reasoning"
        )
    for url in fig.urls:
        assert "shared/" not in url and (url.startswith("https://") or " " in url)


def test_prices_say_where_they_come_from_and_can_be_overridden():
    for inst in hw.INSTANCES.values():
        p = inst.price_usd_per_hour
        assert p.kind in ("third-party", "published") and p.note
    assert hw.price_per_hour("trn3.48xlarge") is None  # nothing public: say so, don't invent
    assert hw.price_per_hour("trn3.48xlarge", override=50.0) == 50.0


def test_logical_cores_are_lnc_physical_cores():
    for gen in ("trn2", "trn3"):
        one, two = hw.logical_core(gen, 1), hw.logical_core(gen, 2)
        assert two.tensor_peak("bf16") == 2 * one.tensor_peak("bf16")
        assert two.hbm_capacity == 2 * one.hbm_capacity
        assert two.cores_per_chip == one.cores_per_chip // 2
    with pytest.raises(ValueError, match="supports LNC"):
        hw.logical_core("trn1", 2)


def test_emulated_profiles_read_the_table():
    # InstanceProfile is a view of the table's entry: nothing copied that could disagree
    assert topology.emulated_instance_names() == sorted(i.name for i in hw.emulated_instances())
    for inst in hw.emulated_instances():
        topo = topology.from_environment({"TORCH_NEURONX_EMULATED_INSTANCE": inst.name})
        p, chip = topo.profile, inst.chip
        assert topo.target.instance is inst and topo.core.chip is chip
        assert p.name == inst.name and p.generation == inst.generation
        assert p.chips == int(inst.chips.value)
        assert p.physical_cores_per_chip == chip.physical_cores
        assert p.hbm_per_chip == int(chip.hbm_capacity.value)
        assert p.core_name == chip.core.name
        assert p.default_lnc == int(chip.default_lnc.value) == topo.lnc
        assert topo.hbm_per_core == topo.core.hbm_capacity


def test_the_neuroncore_version_is_a_table_field_not_parsed_from_its_name():
    assert [c.core.version for c in hw.CHIPS.values()] == [2, 3, 4]
    for c in hw.CHIPS.values():
        assert c.core.name == f"NeuronCore-v{c.core.version}"


def test_an_unknown_generation_is_an_error_naming_the_valid_ones():
    valid = "valid: trn1, trn2, trn3"
    for call in (
        lambda: hw.chip("trn4"),
        lambda: hw.logical_core("Trn2"),
        lambda: hw.table_rows("trn9"),
        # a mistyped table entry fails when the table is built, not when it is costed
        lambda: dataclasses.replace(hw.INSTANCES["trn2.3xlarge"], generation="tnr2"),
    ):
        with pytest.raises(ValueError, match=f"unknown Trainium generation .*; {valid}$"):
            call()
    for call in (lambda: hw.instance("trn2.3xlage"), lambda: hw.target("trn2.3xlage", 2)):
        with pytest.raises(ValueError, match="unknown instance 'trn2.3xlage'; valid: trn1.2x"):
            call()


def test_a_target_is_an_instance_and_one_logical_core_of_it():
    t = hw.target("trn2.48xlarge")
    assert t.instance is hw.INSTANCES["trn2.48xlarge"] and t.generation == "trn2"
    assert (t.lnc, t.cores_per_chip, t.cores_per_instance) == (2, 4, 64)
    assert hw.target("trn2.48xlarge", 1).cores_per_instance == 128


def test_trn3_figures_apply_under_the_trn3_profile(py):
    py(
        """
        import torch, torch_neuronx
        from torch_neuronx.perf import target, estimate
        from torch_neuronx.runtime import hardware as hw
        t = target.current()
        assert t.instance.name == "trn3.3xlarge" and t.core.generation == "trn3" and t.core.lnc == 2
        assert t.core.core.name == "NeuronCore-v4"
        assert t.core.tensor_peak("bf16") == 2 * 79e12 and t.core.tensor_peak("mxfp8") == 2 * 315e12
        assert t.core.hbm_bw == 2 * 528e9  # Trn3's DMA ceiling, below its HBM share
        assert torch.neuron.get_device_properties(0).total_memory == 36 * 2**30
        with torch_neuronx.perf.measure() as m:
            x = torch.ones(1 << 20, device="neuron")
            y = x + x
        rows = {r["name"]: r for r in m.by_op()}
        add = rows["aten::add.Tensor"]
        expect = estimate.estimate_op("add", [(1 << 20,), (1 << 20,)], torch.float32, t)
        assert abs(add["time_s"] - expect.duration) < 1e-12, (add, expect)
        assert m.summary()["generation"] == "trn3"
        """,
        env={"TORCH_NEURONX_EMULATED_INSTANCE": "trn3.3xlarge"},
    )
