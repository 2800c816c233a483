"""Fit the model constants no public document states to the workload calibration set.

Four constants, fitted in this order on ``workload_data.CALIBRATION`` only (never on the
validation rows), by least squares on log(modeled / published) over a grid:

1. jointly, on the Trn1 decode calibration rows (models of 7B to 70B parameters, so the
   per-layer fixed part and the bytes-over-HBM part separate):
   - **Trn1's small in-instance all-reduce fixed cost** (``COLLECTIVE_FIT["trn1"]["chip:reduce"]``):
     nccom-test publishes no all-reduce inside a trn1.32xlarge, only a 32-rank all-gather
     (151 us) and a 2-rank all-reduce (58 us); decode at TP=32 issues two small all-reduces per
     layer;
   - **achievable HBM efficiency** (``params.hbm_efficiency``, the fraction of the
     DMA-capped HBM bandwidth a streaming kernel reaches; grid 0.5-1.0). AWS calls >= 60% good
     for memory-bound kernels [PERF]; the fit lands on the ceiling, 1.0 (the loss falls
     monotonically towards it): Trn1's binding limit is already the 272 GB/s of each core's
     DMA engines [DMA], below its share of the HBM bandwidth;
2. **TensorE efficiency** (``params.tensor_efficiency``): the fraction of the tile rule's
   throughput a compiled matmul reaches, fitted on the compute-bound calibration rows
   (prefill, and training of the newest Neuron SDK era, ``releases.NEWEST``). AWS's target for
   compute-bound engines is >= 90% [PERF];
3. **the release efficiency of each older SDK era** (``releases.EFFICIENCY``): the training
   step's device compute of a run on that era's releases is divided by it, fitted on that
   era's training calibration rows only, with steps 1-2 applied (the split and this term were
   fixed before fitting: docs/decisions.md, "Training rows by software release").

``python -m torch_neuronx.perf.workload_fit`` prints the fitted values; the stored ones (the
hardware table and ``perf/params.py``) must agree (tests/perf/test_workload_calibration.py).
"""

from __future__ import annotations

import contextlib
import math

from torch_neuronx.runtime import hardware as hw

from . import params, releases, workload_data, workloads


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


def _newest(r) -> bool:
    return r.kind == "prefill" or releases.era(r.sdk or "2.24") == releases.NEWEST


def _bound_rows(rows) -> list:
    """The compute-bound calibration rows that fix the TensorE efficiency: prefill, and the
    training rows of the newest SDK era. A TTFT measured through a serving stack fits the
    serving term only (``perf/serving.py``), never a device constant."""
    return [
        r
        for r in rows
        if r.kind in ("training", "prefill") and _newest(r) and not getattr(r, "serving", False)
    ]


def _era_rows(rows, name: str) -> list:
    return [r for r in rows if r.kind == "training" and r.sdk and releases.era(r.sdk) == name]


OLDER_ERAS = tuple(e for e in releases.EFFICIENCY if e != releases.NEWEST)
RELEASE_GRID = tuple(round(0.30 + 0.01 * i, 2) for i in range(71))  # 0.30 .. 1.00


def fit_release_efficiency(name: str, rows=None) -> float:
    """Era ``name``'s release efficiency on its training calibration rows (the other constants
    as they are)."""
    rows = _era_rows(workload_data.CALIBRATION if rows is None else rows, name)
    scores = []
    for e in RELEASE_GRID:
        with releases.override(name, e):
            scores.append((_loss(rows), e))
    return min(scores)[1]


def fit_tensor_efficiency(rows=None) -> float:
    rows = workload_data.CALIBRATION if rows is None else rows
    bound = _bound_rows(rows)
    cands = [round(0.30 + 0.01 * i, 2) for i in range(71)]  # 0.30 .. 1.00
    scores = []
    for e in cands:
        with params.override(tensor_efficiency=e):
            scores.append((_loss(bound), e))
    return min(scores)[1]


HBM_GRID = tuple(round(0.5 + 0.05 * i, 2) for i in range(11))  # 0.50 .. 1.00


def fit() -> dict:
    """{"trn1_chip_reduce_fixed_s", "hbm_efficiency", "tensor_efficiency", "release:<era>"...}
    from the calibration set (each step's values are applied while the next runs). Slow (a minute on two cores): the
    CI test checks the stored values are a local optimum instead (``neighbours``)."""
    dec = [r for r in workload_data.CALIBRATION if r.kind == "decode" and r.gen == "trn1"]
    scores = []
    for h in HBM_GRID:
        with params.override(tensor_efficiency=1.0, hbm_efficiency=h):
            c = fit_trn1_reduce_fixed()
            with trn1_reduce_fixed(c):
                scores.append((_loss(dec), h, c))
    _, h, c = min(scores)
    with trn1_reduce_fixed(c), params.override(hbm_efficiency=h):
        e = fit_tensor_efficiency()
        with params.override(tensor_efficiency=e):
            eras = {f"release:{n}": fit_release_efficiency(n) for n in OLDER_ERAS}
    return {"trn1_chip_reduce_fixed_s": c, "hbm_efficiency": h, "tensor_efficiency": e, **eras}


def losses_around(stored: dict) -> dict:
    """{name: (loss below, loss at, loss above)} of each fitted constant at its stored value and
    one grid step either side (the others held at their stored values): a cheap check that the
    stored values are the fit's optimum."""
    dec = [r for r in workload_data.CALIBRATION if r.kind == "decode" and r.gen == "trn1"]
    bound = _bound_rows(workload_data.CALIBRATION)
    c, h, e = (
        stored["trn1_chip_reduce_fixed_s"],
        stored["hbm_efficiency"],
        stored["tensor_efficiency"],
    )
    out = {}
    with params.override(tensor_efficiency=1.0, hbm_efficiency=h):
        row = []
        for x in (c / 1.05, c, c * 1.05):
            with trn1_reduce_fixed(x):
                row.append(_loss(dec))
        out["trn1_chip_reduce_fixed_s"] = tuple(row)
    with trn1_reduce_fixed(c), params.override(tensor_efficiency=1.0):
        row = []
        for x in (h - 0.05, h, min(h + 0.05, 1.0)):
            with params.override(hbm_efficiency=x):
                row.append(_loss(dec))
        out["hbm_efficiency"] = tuple(row)
    with trn1_reduce_fixed(c), params.override(hbm_efficiency=h):
        row = []
        for x in (e - 0.01, e, e + 0.01):
            with params.override(tensor_efficiency=x):
                row.append(_loss(bound))
        out["tensor_efficiency"] = tuple(row)
        for n in OLDER_ERAS:
            x0, era_rows = stored[f"release:{n}"], _era_rows(workload_data.CALIBRATION, n)
            row = []
            for x in (x0 - 0.01, x0, min(x0 + 0.01, 1.0)):
                with releases.override(n, x):
                    row.append(_loss(era_rows))
            out[f"release:{n}"] = tuple(row)
    return out


def stored() -> dict:
    """The values the hardware table and ``perf/params.py`` hold."""
    p = params.Params()
    return {
        "trn1_chip_reduce_fixed_s": float(hw.COLLECTIVE_FIT["trn1"]["chip:reduce"][0]),
        "hbm_efficiency": p.hbm_efficiency,
        "tensor_efficiency": p.tensor_efficiency,
        **{f"release:{n}": releases.EFFICIENCY[n] for n in OLDER_ERAS},
    }


if __name__ == "__main__":  # pragma: no cover
    print(fit())
