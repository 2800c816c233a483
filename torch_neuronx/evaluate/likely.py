"""Every projected time and cost of a report with its likely range (issue 23, item 8).

A projection row's step time is modeled; on the published runs of the same kind of work the
model was off by a known factor (perf/ranges.py: the validation rows it was never fitted to).
Each row gets ``likely``: for every time and cost it shows, ``[lo, hi]`` = the figure scaled
by that factor (a cost is time x price, so it scales with the time; a rate, tokens/s, scales
inversely). The section gets ``range``: the kind, the band per generation and the published
runs behind it (the HTML lists them). The range is how wrong the model was on those runs, not
a statistical interval; a kind backed by one run has a narrow or one-sided range, and says so
by listing that one run."""

from __future__ import annotations

from torch_neuronx.perf import ranges
from torch_neuronx.runtime import hardware

TIMES = ("step_s", "compiled_step_s")
COSTS = ("usd_per_1000_steps", "usd_per_million_tokens", "usd_per_1000_samples")
RATES = ("samples_per_s", "tokens_per_s")


def label(kind: str, generations=("trn2",)) -> str:
    """The range's label, with the scope limits of ``kind`` on those generations
    (``ranges.SCOPE``: published runs of the kind the range does not cover)."""
    limits = dict.fromkeys(x for g in generations if (x := ranges.scope(kind, g)))
    return f"modeled; likely range from the validation errors of {kind} work" + "".join(
        f"; {x}" for x in limits
    )


def factors(kind: str, generation: str) -> tuple:
    """(lo, hi) multipliers of a modeled time of ``kind`` on ``generation``."""
    return ranges.likely(1.0, kind, generation)


def add(section: dict, kind: str) -> None:
    """Adds ``likely`` to each projection row and to the recommendation, and ``range`` to the
    section (in place)."""
    gens = {}
    for row in (section.get("profiles") or []) + (section.get("compiled_run") or []):
        gen = hardware.instance(row["instance"]).generation
        gens[gen] = factors(kind, gen)
        lo, hi = gens[gen]
        got = {k: [row[k] * lo, row[k] * hi] for k in TIMES + COSTS if row.get(k) is not None}
        got.update({k: [row[k] / hi, row[k] / lo] for k in RATES if row.get(k)})
        row["likely"] = {**got, "kind": kind}
    rec = section.get("recommendation") or {}
    if rec.get("profile"):
        row = next((r for r in section.get("profiles") or [] if r["profile"] == rec["profile"]), {})
        if rec.get("metric") in (row.get("likely") or {}):
            rec["likely"] = row["likely"][rec["metric"]]
    section["range"] = {
        "kind": kind,
        "label": label(kind, sorted(gens) or ("trn2",)),
        "factors": {g: list(f) for g, f in sorted(gens.items())},
        "backing": {g: ranges.backing(kind, g) for g in sorted(gens)}
        if kind == "collective"
        else {"all": ranges.backing(kind)},
    }


def span(pair, scale: float = 1.0, fmt: str = "{:,.3g}") -> str:
    """'lo-hi' of a likely pair (times ``scale``), for the renderers."""
    lo, hi = pair
    a, b = fmt.format(lo * scale), fmt.format(hi * scale)
    return a if a == b else f"{a}-{b}"
