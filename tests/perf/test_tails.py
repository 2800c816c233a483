"""The p99 tail factor of serving rows (perf/tails.py): fitted on published p50/p99 pairs only,
by the rule of docs/decisions.md ("Tail factor for p99 serving rows"), and applied to p99 rows."""

import math

import pytest

from torch_neuronx.perf import tails, workload_data, workloads


def test_factor_is_the_geomean_of_the_usable_pairs_only():
    dec = [p for p in tails.PAIRS if p.kind == "decode"]
    assert all(p.usable for p in dec)
    g = math.exp(sum(math.log(p.p99 / p.p50) for p in dec) / len(dec))
    f = tails.FACTORS["decode"]
    assert f["factor"] == pytest.approx(g) and f["n"] == len(dec)
    assert f["lo"] == min(p.ratio for p in dec) and f["hi"] == max(p.ratio for p in dec)
    assert 1.0 < f["factor"] < 1.05  # a batch-1 vLLM token's p99 is within 5% of its median


def test_a_pair_whose_slowest_request_is_a_cold_outlier_is_not_used():
    ttft = [p for p in tails.PAIRS if p.kind == "prefill"]
    assert ttft and not any(p.usable for p in ttft)
    assert all(p.max > tails.USABLE_MAX_OVER_P95 * p.p95 for p in ttft)
    assert tails.FACTORS["prefill"] is None and tails.factor("prefill", "p99") == 1.0
    # without the test the factor would be huge: the doc reports it, nothing applies it
    assert tails.unscreened("prefill")["factor"] > 30


def test_no_pair_is_a_heldout_run_or_uses_a_model_output():
    held = {r.model for r in workload_data.HELDOUT if r.kind in ("decode", "prefill")}
    assert held == {"Qwen3-32B"}
    assert not any("Qwen" in p.run for p in tails.PAIRS)
    for p in tails.PAIRS:  # every figure a published quantile, ordered as quantiles are
        assert 0 < p.p50 <= p.p95 <= p.p99 <= p.max
        assert "aws-neuron-sdk/blob/" in p.source


def test_p99_rows_are_compared_with_the_tail_p50_rows_without():
    q = next(r for r in workload_data.HELDOUT if r.kind == "decode")
    assert q.percentile == "p99"
    assert workloads.compared(q, 10.0) == pytest.approx(10.0 * tails.FACTORS["decode"]["factor"])
    p50 = next(r for r in workload_data.VALIDATION if r.kind == "decode" and r.serving)
    assert workloads.compared(p50, 10.0) == 10.0
    with pytest.raises(ValueError, match="p90"):
        tails.factor("decode", "p90")


def test_qwen_tpot_is_read_over_the_512_tokens_the_server_was_asked_for():
    q = next(r for r in workload_data.HELDOUT if r.kind == "decode")
    assert q.value == pytest.approx((6044.886 - 48.284) / 511)
