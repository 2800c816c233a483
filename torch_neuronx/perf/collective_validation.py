"""The measured-collective model beside every published nccom-test row (docs/perf-model.md).

Two tables: the calibration rows (the fit saw them: their error says how well the form fits)
and the validation rows (never fitted: their error is the model's). Per generation, the
geometric mean of modeled speed / published speed and the worst single row, for the measured
model and for the alpha-beta "peak" model it replaced. Nothing here ran on a Trainium.
"""

from __future__ import annotations

import math

from . import collective_data as data
from . import params
from .collective_fit import _REP, placement
from .collectives import collective_cost
from .target import for_instance


def modeled_s(r, model: str = "measured") -> float:
    """Modeled in-graph seconds of published row ``r`` under ``model``."""
    tgt = for_instance(_REP[r.gen])
    group = placement(r.gen, r.ranks, r.instances)
    with params.override(collective_model=model):
        if r.op == "send":  # permute: each rank exchanges its buffer with one peer
            return collective_cost(
                "send", r.size, [group[0]], tgt, peer=group[1], in_graph=True
            ).duration
        return collective_cost(r.op, r.size, group, tgt, in_graph=True).duration


def speed_ratio(r, model: str = "measured") -> float:
    """modeled speed / published speed (> 1: the model is faster than the measurement)."""
    return r.time_us * 1e-6 / modeled_s(r, model)


def summary(rows) -> dict:
    """{gen: {"n", "geomean", "worst", "geomean_peak"}}; "worst" is the ratio furthest from 1
    (by factor, either way)."""
    out = {}
    for gen in sorted({r.gen for r in rows}):
        rs = [r for r in rows if r.gen == gen]
        q = [speed_ratio(r) for r in rs]
        qp = [speed_ratio(r, "peak") for r in rs]
        out[gen] = {
            "n": len(rs),
            "geomean": math.exp(sum(map(math.log, q)) / len(q)),
            "worst": max(q, key=lambda x: abs(math.log(x))),
            "geomean_peak": math.exp(sum(map(math.log, qp)) / len(qp)),
        }
    return out


def markdown(rows, name: str = "validation") -> str:
    out = [
        "| run (nccom-test) | gen | op | ranks | size (B) | published (us) | modeled (us) | "
        "modeled / published speed | peak model speed ratio | our reading of the run |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        m = modeled_s(r) * 1e6
        out.append(
            f"| {r.series} | {r.gen} | {r.op} | {r.ranks} | {r.size:,} | {r.time_us:,.4g} | "
            f"{m:,.4g} | {speed_ratio(r):.2f} | {speed_ratio(r, 'peak'):.2f} | {r.note} |"
        )
    out += ["", "| set | gen | rows | geomean (measured) | worst row | geomean (peak model) |"]
    out += ["|---|---|---:|---:|---:|---:|"]
    for gen, s in summary(rows).items():
        out.append(
            f"| {name} | {gen} | {s['n']} | {s['geomean']:.2f} | {s['worst']:.2f} | "
            f"{s['geomean_peak']:.2f} |"
        )
    return "\n".join(out)


def excluded_markdown() -> str:
    """The published rows neither fitted nor validated, with the model's figure and the reason."""
    out = [
        "| run (nccom-test) | gen | op | ranks | size (B) | published (us) | modeled (us) | "
        "modeled / published speed | why it is excluded |",
        "|---|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for r, why in data.EXCLUDED:
        out.append(
            f"| {r.series} | {r.gen} | {r.op} | {r.ranks} | {r.size:,} | {r.time_us:,.4g} | "
            f"{modeled_s(r) * 1e6:,.4g} | {speed_ratio(r):.2f} | {why} |"
        )
    return "\n".join(out)


def both_markdown() -> str:
    return (
        f"Calibration set (the fit saw these; source: {data.URL}):\n\n"
        + markdown(data.CALIBRATION, "calibration")
        + f"\n\nValidation set (never fitted; source: {data.URL}):\n\n"
        + markdown(data.VALIDATION)
        + "\n\nExcluded (published, but inconsistent with the other runs; neither fitted nor "
        "validated):\n\n"
        + excluded_markdown()
        + "\n\nHeld-out set (collected 2026-12-02, after the fit and the exclusions; costed "
        f"with the constants frozen; source: {data.URL}):\n\n" + markdown(data.HELDOUT, "held-out")
    )
