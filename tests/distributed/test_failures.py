"""Point 4: a dead or absent rank makes the others raise (no hang); mismatches are clear.

The harness kills any launch that outlives its timeout, so a hang fails the test."""

import pytest
from _launch import launch


@pytest.mark.parametrize(
    "scenario,check",
    [
        ("dead", "peer_died"),
        ("absent", "never_reached_sync"),
        ("absent_async", "never_reached_async"),
    ],
)
def test_peer_failure_raises(tmp_path, scenario, check):
    res = launch("failures.py", tmp_path, nprocs=2, args=[scenario], timeout=90).check()
    r0 = res.results(0)
    assert r0[check]["ok"], r0[check].get("error")
    info = r0[check]["value"]
    assert info["raised"] in ("DistBackendError", "RuntimeError", "DistNetworkError"), info
    if scenario == "dead":  # gloo: "Connection reset by peer" / "Connection closed by peer"
        assert "by peer" in info["message"], info
    else:
        assert "timeout" in info["message"].lower() or "timed out" in info["message"].lower(), info


def test_mismatch_detected_with_debug_detail(tmp_path):
    res = launch(
        "failures.py",
        tmp_path,
        nprocs=2,
        args=["mismatch"],
        env={"TORCH_DISTRIBUTED_DEBUG": "DETAIL"},
        timeout=90,
    ).check()
    for r in range(2):
        out = res.results(r)
        for name in ("shape_mismatch", "dtype_mismatch"):
            assert out[name]["ok"], out[name].get("error")
            msg = out[name]["value"]["message"]
            assert "mismatch between collectives" in msg, msg
        assert out["shape_mismatch"]["value"]["message"].count("TensorShape") >= 1
        assert "TensorDtypes" in out["dtype_mismatch"]["value"]["message"]
        assert out["still_usable_after"]["value"] == [2.0] * 4


def test_more_local_ranks_than_visible_cores_is_a_clear_error(tmp_path):
    res = launch(
        "failures.py",
        tmp_path,
        nprocs=2,
        args=["too_many_ranks"],
        env={"NEURON_RT_VISIBLE_CORES": "0"},
        timeout=90,
    ).check()
    r1 = res.results(1)
    assert r1["device_count"] == 1
    assert not r1["init"]["ok"]
    msg = r1["init"]["error"]
    assert "LOCAL_RANK=1" in msg and "1 logical NeuronCore" in msg, msg
