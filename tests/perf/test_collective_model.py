"""Collectives (issue 10, point 2): an alpha-beta model over cores of a chip, chips of an
instance and instances; all_reduce time grows with size and rank count as the algorithm says."""

import math

import pytest

from torch_neuronx.perf import collectives as coll
from torch_neuronx.perf import params, target
from torch_neuronx.runtime import hardware as hw

TRN2 = target.for_instance("trn2.48xlarge")  # LNC=2: 4 logical cores per chip, 64 per instance


def _t(op, nbytes, ranks, tgt=TRN2, **kw):
    kw.setdefault("collective_model", "peak")  # these pin the alpha-beta formulas
    with params.override(**kw):
        c = coll.collective_cost(op, nbytes, list(ranks), tgt)
        return c.duration - params.current().eager_launch_s, c


def test_levels_follow_the_placement_of_ranks():
    assert [lv.name for lv in coll.levels(range(4), TRN2)] == ["cores of a chip"]
    assert [lv.name for lv in coll.levels([0, 4, 8], TRN2)] == ["chips of an instance"]
    lv = coll.levels(range(128), TRN2)  # two instances
    assert [x.name for x in lv] == ["cores of a chip", "chips of an instance", "instances (EFA)"]
    assert [x.size for x in lv] == [4, 16, 2]
    chip = hw.CHIPS["trn2"]
    assert lv[1].bandwidth == chip.neuronlink_bw.value / 2
    assert lv[2].latency == chip.efa_latency.value


def test_ring_all_reduce_matches_its_formula():
    n, ranks = 256 << 20, range(16)  # 4 chips x 4 cores
    body, c = _t("all_reduce", n, ranks, collective_algorithms=("ring",))
    expected = 2 * sum(
        (lv.size - 1) * lv.latency + (lv.size - 1) / lv.size * n / lv.bandwidth
        for lv in coll.levels(ranks, TRN2)
    )
    assert body == pytest.approx(expected)
    assert c.detail.startswith("ring")


def test_all_reduce_grows_with_size_bandwidth_term_linear():
    ranks = range(64)
    t1, _ = _t("all_reduce", 64 << 20, ranks, collective_algorithms=("ring",))
    t2, _ = _t("all_reduce", 128 << 20, ranks, collective_algorithms=("ring",))
    lat = 2 * sum((lv.size - 1) * lv.latency for lv in coll.levels(ranks, TRN2))
    assert t2 > t1
    assert (t2 - lat) == pytest.approx(2 * (t1 - lat))  # bandwidth term is linear in bytes


def test_all_reduce_grows_with_rank_count():
    n = 1 << 20
    times = [_t("all_reduce", n, range(p))[0] for p in (2, 4, 8, 16, 64, 128, 256)]
    assert all(a < b for a, b in zip(times, times[1:]))
    # crossing to a second instance costs an EFA hop (15 us) at least
    assert times[-2] - times[-3] > hw.CHIPS["trn2"].efa_latency.value


def test_small_messages_take_the_tree_large_ones_the_ring():
    _, small = _t("all_reduce", 1024, range(64))
    _, large = _t("all_reduce", 1 << 30, range(64))
    assert small.detail.startswith("tree") and large.detail.startswith("ring")
    tree_lat = 2 * sum(
        math.ceil(math.log2(lv.size)) * lv.latency for lv in coll.levels(range(64), TRN2)
    )
    assert _t("all_reduce", 0, range(64))[0] == pytest.approx(tree_lat)


def test_one_rank_costs_only_the_launch():
    body, c = _t("all_reduce", 1 << 20, [3])
    assert body == 0.0 and c.bound == "launch"


@pytest.mark.parametrize("op", ["all_gather", "reduce_scatter"])
def test_gather_and_scatter_are_half_a_ring_all_reduce(op):
    n, ranks = 64 << 20, range(16)
    t, _ = _t(op, n, ranks)
    ar, _ = _t("all_reduce", n, ranks, collective_algorithms=("ring",))
    assert t == pytest.approx(ar / 2)


def test_ultraserver_instances_talk_over_neuronlink():
    trn2u = target.for_instance("trn2u.48xlarge")
    ranks = [0, 64, 128, 192]  # one core on each of the 4 instances of an UltraServer
    lv = coll.levels(ranks, trn2u)
    assert lv[-1].name.startswith("instances (UltraServer")
    assert _t("all_reduce", 1 << 26, ranks, trn2u)[0] < _t("all_reduce", 1 << 26, ranks, TRN2)[0]


def test_every_collective_has_a_model():
    for op in (
        "all_reduce",
        "all_gather",
        "reduce_scatter",
        "broadcast",
        "reduce",
        "all_to_all",
        "barrier",
        "send",
        "recv",
        "allreduce",
        "_allgather_base",
        "alltoall_base",
    ):
        assert coll.collective_cost(op, 1 << 20, list(range(8)), TRN2).duration > 0
    with pytest.raises(ValueError, match="no model for collective"):
        coll.collective_cost("gossip", 1, [0, 1], TRN2)
