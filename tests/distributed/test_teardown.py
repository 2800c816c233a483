"""Group teardown with a collective from backward still in flight: the deterministic form of the
deadlock at exit of DDP scripts (docs/distributed.md, "Known issues"; workers/teardown.py).
Before the fix rank 0 hung in the first scenario and the launch timed out."""

import pytest
from _launch import launch

SCENARIOS = ("split_group", "new_group")


@pytest.mark.parametrize("backend", ["neuron", "cpu:gloo,neuron:neuron"])
def test_teardown_with_collective_in_flight(backend, tmp_path):
    res = launch("teardown.py", tmp_path, nprocs=2, args=[backend], timeout=90).check()
    for r in range(2):
        results = res.results(r)
        for name in SCENARIOS:
            got = results[name]
            assert got["ok"], f"rank {r} {name}: {got['error']}\n{got['trace']}"
        many = results["many_groups"]
        assert many["ok"], f"rank {r} many_groups: {many['error']}\n{many['trace']}"
        # (threads, sockets) after each create/use/destroy cycle: as before the cycles
        assert all(tuple(c) == tuple(many["value"]["before"]) for c in many["value"]["after"]), many
    # rank 1 joined the collective PEER_DELAY_S (0.3 s) after rank 0 began tearing down: rank 0's
    # teardown waited for the in-flight work, so each scenario exercised the join
    assert all(res.results(0)[n]["value"]["teardown_s"] > 0.2 for n in SCENARIOS), res.results(0)
