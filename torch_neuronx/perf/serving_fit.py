"""Fit of the serving-stack term (``perf/serving.py``) on the serving calibration rows, by the
rule of docs/decisions.md ("Serving-stack term of a time to first token through vLLM"): the mean
over the calibration TTFTs measured through a serving stack of published - modeled device TTFT -
one graph dispatch. Held-out and validation rows are never read.

``python -m torch_neuronx.perf.serving_fit`` prints the fit; the stored ``serving.PER_REQUEST_S``
must agree (tests/perf/test_serving_term.py).
"""

from __future__ import annotations

from . import workload_data, workloads
from .serving import DISPATCH_S


def calibration_rows(rows=None) -> list:
    """The rows the term is fitted on: calibration TTFTs measured through a serving stack."""
    rows = workload_data.ROWS if rows is None else rows
    return [r for r in rows if r.split == "calibration" and r.serving and r.kind == "prefill"]


def residual_s(row, modeled_ms: float | None = None) -> float:
    """Published TTFT - modeled device TTFT - one dispatch, seconds (the row's serving time)."""
    v = workloads.predict(row) if modeled_ms is None else modeled_ms
    return (row.value - v) * 1e-3 - DISPATCH_S


def fit(rows=None) -> dict:
    """{"per_request_s", "n", "residuals_s"}: the mean residual of the calibration rows."""
    cal = calibration_rows(rows)
    if not cal:
        raise ValueError("no serving-stack calibration row: the term cannot be fitted")
    res = [residual_s(r) for r in cal]
    return {"per_request_s": sum(res) / len(res), "n": len(res), "residuals_s": res}


if __name__ == "__main__":  # pragma: no cover
    print(fit())
