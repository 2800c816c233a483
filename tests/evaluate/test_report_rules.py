"""Rules of the report that need no run: the compile-cache split, the memory gate and the
sharding estimate."""

from __future__ import annotations

import types

from torch_neuronx.compile import dynamo_metrics
from torch_neuronx.evaluate import build, profiles, report


def test_compile_time_is_split_by_the_backends_cache_records(monkeypatch):
    records = [
        {"name": "a", "cache": "miss", "total_s": 9.0, "timestamp": 100.0},
        {"name": "b", "cache": "hit", "total_s": 0.5, "timestamp": 101.0},
        {"name": "old", "cache": "miss", "total_s": 50.0, "timestamp": 1.0},  # before the region
    ]
    monkeypatch.setattr(dynamo_metrics, "get_dynamo_metrics", lambda: records)
    c = types.SimpleNamespace(steps=[], recompiles=[], graph_breaks=[], wall_start=50.0)
    co = build.compilation(c, None)
    assert co["graphs"] == 2 and co["compile_s"] == 9.5
    assert co["compile_cold_s"] == 9.0 and co["compile_warm_cache_s"] == 0.5
    assert co["graphs_from_cache"] == 1 and co["warm_cache_note"] == ""
    records[1]["cache"] = "miss"
    assert "run again" in build.compilation(c, None)["warm_cache_note"]


def test_memory_gate_and_fsdp_estimate_when_one_core_is_not_enough():
    profs = profiles.profiles(["trn2.3xlarge"], 2)
    cap = profs[0].hbm_per_core
    static = {"parameters": cap, "gradients": cap, "optimizer_state": 2 * cap}
    activations = cap // 4
    mem = build.memory_fit(4 * cap + activations, 4 * cap + activations, static, profs)
    (row,) = mem["fit"]
    assert not row["fits_one_core"] and "does not fit" in row["data_parallel"]
    # ceil(4 cap / (cap - cap/4)) = 6 shards of parameters + gradients + optimizer state
    assert row["fsdp_degree_estimate"] == 6 and "estimate" in row["fsdp_note"]
    assert row["instances_needed"] == -(-6 // profs[0].cores)  # more cores than one instance has
    rep = {"memory": mem, "projection": {"emulated_profile": row["profile"]}}
    # the one gate (report.gate) of every mode: fits one core of no profile
    assert report.gate(rep, ["memory"]) == [
        f"memory: does not fit one core of any profile ({row['profile']})"
    ]
    small = build.memory_fit(cap // 2, cap // 2, static, profs)
    assert report.gate({"memory": small, "projection": {}}, ["memory"]) == []
