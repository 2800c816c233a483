"""Fit the model constants no public document states to the workload calibration set.

Two constants, fitted in this order on ``workload_data.CALIBRATION`` only (never on the
validation rows), by least squares on log(modeled / published) over a grid:

1. **Trn1's small in-instance all-reduce fixed cost** (``COLLECTIVE_FIT["trn1"]["chip:reduce"]``):
   nccom-test publishes no all-reduce inside a trn1.32xlarge, only a 32-rank all-gather (151 us)
   and a 2-rank all-reduce (58 us). Decode at TP=32 issues two small all-reduces per layer, so
   the Trn1 decode calibration rows fix it (their weights-over-HBM part is the roofline's).
2. **TensorE efficiency** (``params.tensor_efficiency``): the fraction of the tile rule's
   throughput a compiled matmul reaches, fitted on the compute-bound calibration rows
   (training and prefill). AWS's target for compute-bound engines is >= 90% [PERF].

``python -m torch_neuronx.perf.workload_fit`` prints the fitted values; the stored ones (the
hardware table and ``perf/params.py``) must agree (tests/perf/test_workload_calibration.py).
"""

from __future__ import annotations

import contextlib
import math

from torch_neuronx.runtime import hardware as hw

from . import params, workload_data, workloads


@contextlib.contextmanager
def trn1_reduce_fixed(seconds: float):
    """Temporarily set Trn1's in-instance all-reduce fixed cost (fit only)."""
    fits = hw.COLLECTIVE_FIT["trn1"]
    old = fits.get("chip:reduce")
    fits["chip:reduce"] = (seconds, fits["chip"][1])
    try:
        yield
    finally:
        if old is None:
            del fits["chip:reduce"]
        else:
            fits["chip:reduce"] = old


def _loss(rows) -> float:
    return sum(math.log(workloads.speed_ratio(r)) ** 2 for r in rows)


def _grid(lo: float, hi: float, n: int) -> list:
    return [lo * (hi / lo) ** (i / (n - 1)) for i in range(n)]


def fit_trn1_reduce_fixed(rows=None) -> float:
    rows = workload_data.CALIBRATION if rows is None else rows
    dec = [r for r in rows if r.kind == "decode" and r.gen == "trn1"]
    best, lo, hi = None, 10e-6, 400e-6
    for _ in range(3):  # coarse to fine
        cands = _grid(lo, hi, 13)
        scores = []
        for c in cands:
            with trn1_reduce_fixed(c):
                scores.append((_loss(dec), c))
        best = min(scores)[1]
        lo, hi = best / 1.3, best * 1.3
    return best


def fit_tensor_efficiency(rows=None) -> float:
    rows = workload_data.CALIBRATION if rows is None else rows
    bound = [r for r in rows if r.kind in ("training", "prefill")]
    cands = [round(0.30 + 0.01 * i, 2) for i in range(71)]  # 0.30 .. 1.00
    scores = []
    for e in cands:
        with params.override(tensor_efficiency=e):
            scores.append((_loss(bound), e))
    return min(scores)[1]


def fit() -> dict:
    """{"trn1_chip_reduce_fixed_s": ..., "tensor_efficiency": ...} from the calibration set
    (the first fit is applied while the second runs)."""
    with params.override(tensor_efficiency=1.0):
        c = fit_trn1_reduce_fixed()
    with trn1_reduce_fixed(c):
        e = fit_tensor_efficiency()
    return {"trn1_chip_reduce_fixed_s": c, "tensor_efficiency": e}


if __name__ == "__main__":  # pragma: no cover
    print(fit())
