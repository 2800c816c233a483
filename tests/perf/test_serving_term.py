"""The serving-stack term of a TTFT through vLLM (perf/serving.py, issue 23): fitted on the
serving calibration rows only, by the rule of docs/decisions.md ("Serving-stack term of a time to
first token through vLLM"), reported on its own line and never in device time."""

import dataclasses

import pytest

from torch_neuronx.perf import (
    serving,
    serving_fit,
    validation,
    workload_data,
    workload_fit,
    workloads,
)


@pytest.fixture(scope="module")
def cal():
    return serving_fit.calibration_rows()


def test_the_term_is_fitted_on_the_one_published_calibration_row(cal):
    # the rule's rows, as found: the Llama-3.1-8B baseline of vLLM Neuron's EAGLE3 tutorial
    assert [(r.model, r.value, r.tokens, r.bucket, r.tp) for r in cal] == [
        ("Llama-3.1-8B", 51.07, 512, 512, 8)
    ]
    (r,) = cal
    assert r.source == workload_data.L8_EAGLE3 and r.source.startswith(
        "https://github.com/aws-neuron/aws-neuron-sdk/blob/"
    )
    # the figures are quoted from the source with the run's configuration
    for quoted in (
        "median_ttft_ms baseline=51.07",
        "--max-concurrency 2",
        "--tensor-parallel-size 8",
    ):
        assert quoted in r.note
    assert r.serving and r.split == "calibration" and r.gen == "trn2"


def test_stored_term_is_the_fit(cal):
    f = serving_fit.fit()
    assert f["n"] == 1
    assert serving.PER_REQUEST_S == pytest.approx(f["per_request_s"], abs=2e-6)
    # published - modeled device TTFT - one dispatch, by hand
    (r,) = cal
    by_hand = (r.value - workloads.predict(r)) * 1e-3 - serving.DISPATCH_S
    assert f["per_request_s"] == pytest.approx(by_hand)
    assert 0.0 < serving.PER_REQUEST_S < r.value * 1e-3
    assert "1 calibration row" in serving.PROVENANCE and "no validation row" in serving.PROVENANCE


def test_no_heldout_or_validation_row_fits_the_term(monkeypatch):
    held = [r for r in workload_data.HELDOUT if r.kind == "prefill"]
    assert held and not set(map(id, held)) & set(map(id, serving_fit.calibration_rows()))
    # only calibration rows are read: relabelling the calibration row as validation leaves none
    rows = [
        r.__class__(**{**r.__dict__, "split": "validation"}) for r in serving_fit.calibration_rows()
    ]
    with pytest.raises(ValueError, match="no serving-stack calibration row"):
        serving_fit.fit(rows + list(workload_data.VALIDATION) + list(workload_data.HELDOUT))


def test_serving_rows_fit_no_device_constant():
    # the serving calibration TTFT never enters the TensorE-efficiency fit
    bound = workload_fit._bound_rows(workload_data.CALIBRATION)
    assert bound and not any(r.serving for r in bound)


def test_term_is_its_own_line_never_in_device_time(cal):
    (r,) = cal
    v = workloads.predict(r)
    # predict is device time: the prefill at its bucket, no serving term in it
    assert workloads.compared(r, v) == pytest.approx(v + serving.total_s() * 1e3)
    assert serving.total_s() == pytest.approx(serving.DISPATCH_S + serving.PER_REQUEST_S)
    # a decode row through vLLM stays device time (async execution hides the dispatch)
    d = next(
        x for x in workload_data.ROWS if x.serving and x.kind == "decode" and x.percentile == "p50"
    )
    assert workloads.compared(d, 10.0) == 10.0
    table = validation.serving_markdown([(r, v)])
    assert (
        "per request, fitted (applied)" in table
        and f"{serving.PER_REQUEST_S * 1e3:.4g} ms" in table
    )
    assert "fitted on 1 calibration row" in validation.workload_markdown([(r, v)])


def test_bucket_is_costed_as_device_work():
    # NxDI encodes the whole bucket the prompt is padded to: the 70B 10k-token prompt runs in the
    # 12,288 bucket (default buckets), the 405B in 10,240 (the tutorial's list)
    rows = {
        r.model: r
        for r in workload_data.ROWS
        if r.kind == "prefill" and r.gen == "trn2" and r.bucket
    }
    assert rows["Llama-3.3-70B"].bucket == 12288 and rows["Llama-3.1-405B"].bucket == 10240
    assert rows["Qwen3-32B"].bucket == rows["Qwen3-32B"].tokens == 128
    r = rows["Llama-3.1-405B"]
    assert workloads.predict(r) > workloads.predict(dataclasses.replace(r, bucket=0))


def test_docs_serving_block_is_the_generated_one():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "perf-model.md").read_text()
    start, end = "<!-- generated:serving -->\n", "\n<!-- /generated:serving -->"
    block = text[text.index(start) + len(start) : text.index(end)]
    assert block == validation.serving_markdown()
    # the held-out row is shown with the term on, and the term with its provenance
    assert "| held-out | Qwen3-32B (p99)" in block and serving.PROVENANCE in block
