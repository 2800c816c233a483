"""A modeled time's likely range, from the validation errors of its kind of work.

The validation tables (``perf/validation.py``, ``perf/collective_validation.py``) give, per kind
of work, the ratio modeled speed / published speed of every public reference the model never
fitted. A modeled time ``t`` of that kind is then reported as "t, likely lo-hi (modeled)" with

    lo = t x min(1, smallest ratio),   hi = t x max(1, largest ratio)

(a ratio above 1 means the model was faster than the published run, so the real time is
longer). The range says how wrong the model was on the published cases of that kind; it is not
a statistical interval, and kinds with one or two references have wide or one-sided ranges.

Kinds: ``kernel`` (single ops and kernels: the peak, bandwidth and kernel-efficiency rows),
``training``, ``decode``, ``prefill`` (whole workloads), ``collective`` (per generation, the
nccom-test validation set).
"""

from __future__ import annotations

#: {kind: (smallest, largest) speed ratio} of the workload validation rows, as
#: ``workload_bands()`` computes them (tests/perf/test_ranges.py checks they agree; tracing the
#: workloads takes seconds, too slow for every ``torch-neuronx cost``)
BANDS: dict = {
    "kernel": (0.62, 1.0),
    "training": (0.87, 1.61),
    "decode": (0.8, 1.22),
    "prefill": (0.73, 1.27),
}

KINDS = ("kernel", "training", "decode", "prefill", "collective")


def speed_ratio(row) -> float:
    """modeled speed / published speed of a validation row (time units are inverted)."""
    return 1.0 / row.ratio if row.unit in ("ms", "us", "s") else row.ratio


def workload_bands(rows=None, pairs=None) -> dict:
    """{kind: (min, max) speed ratio}: ``kernel`` from the single-kernel rows
    (``validation.all_rows``), the workload kinds from the **validation** rows of
    ``perf/workload_data.py`` (never the calibration or excluded ones; traces the workloads)."""
    from . import validation, workloads

    rows = validation.all_rows() if rows is None else rows
    pairs = (
        validation.workload_rows(validation.workload_data.VALIDATION) if pairs is None else pairs
    )
    out: dict = {}

    def add(kind, s):
        lo, hi = out.get(kind, (s, s))
        out[kind] = (min(lo, s), max(hi, s))

    for r in rows:
        add("kernel", speed_ratio(r))
    for r, v in pairs:
        if r.split == "validation":
            add(r.kind, workloads.speed_ratio(r, v))
    return {k: (round(lo, 2), round(hi, 2)) for k, (lo, hi) in out.items()}


def collective_band(generation: str) -> tuple:
    """(min, max) speed ratio of the nccom-test validation rows of ``generation`` (Trn3, which
    has none, takes Trn2's)."""
    from . import collective_data as data
    from .collective_validation import speed_ratio as ratio

    rs = [ratio(r) for r in data.VALIDATION if r.gen == generation] or [
        ratio(r) for r in data.VALIDATION if r.gen == "trn2"
    ]
    return (round(min(rs), 2), round(max(rs), 2))


def band(kind: str, generation: str = "trn2") -> tuple:
    if kind == "collective":
        return collective_band(generation)
    if kind not in BANDS:
        raise ValueError(f"unknown kind of work {kind!r}; one of {', '.join(KINDS)}")
    return BANDS[kind]


def likely(seconds: float, kind: str, generation: str = "trn2") -> tuple:
    """(lo, hi) seconds: the range a modeled time of ``kind`` was off by on the published cases."""
    lo, hi = band(kind, generation)
    return (seconds * min(1.0, lo), seconds * max(1.0, hi))


def _fmt(s: float) -> str:
    if s >= 1:
        return f"{s:.3g} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} us"


def describe(seconds: float, kind: str, generation: str = "trn2") -> str:
    """ "14.2 ms, likely 12-19 ms (modeled; kind: validation range)"."""
    lo, hi = likely(seconds, kind, generation)
    return (
        f"{_fmt(seconds)}, likely {_fmt(lo)} to {_fmt(hi)} "
        f"(modeled; range from the validation errors of {kind} work)"
    )


#: the published runs behind each workload kind's band (``BANDS``), as ``validation.all_rows()``
#: gives them: (run, modeled speed / published speed, source). Kept here, like ``BANDS``, so
#: that a report can name them without tracing the workloads; tests/evaluate/test_ranges_shown.py
#: checks both against the validation rows.
BACKING: dict = {
    "kernel": (
        ("Trainium dense BF16 peak", 0.97, "[TRN1]"),
        ("Trainium dense FP8 peak", 0.97, "[TRN1]"),
        ("Trainium dense FP32 peak", 0.97, "[TRN1]"),
        ("Trainium HBM bandwidth", 0.62, "[TRN1, TRN1I]"),
        ("Trainium2 dense BF16 peak", 0.95, "[T2]"),
        ("Trainium2 dense FP8 peak", 0.97, "[T2]"),
        ("Trainium2 dense FP32 peak", 0.88, "[T2]"),
        ("Trainium2 HBM bandwidth", 1.0, "[T2, TRN2I]"),
        ("Trainium3 dense BF16 peak", 0.94, "[T3]"),
        ("Trainium3 dense FP8 peak", 1.0, "derived [T3, SCHEMA]"),
        ("Trainium3 dense FP32 peak", 0.87, "[T3]"),
        ("Trainium3 dense MXFP8 peak", 1.0, "[T3]"),
        ("Trainium3 HBM bandwidth", 0.86, "[T3, TRN3I]"),
        (
            "single-kernel efficiency, 2048^3 BF16 NKI matmul",
            1.09,
            "third-party (public NKI kernel-tuning repositories; unverified)",
        ),
    ),
    "training": (
        (
            "Llama-3.1-8B pre-training throughput",
            1.1,
            "AWS Neuron Trn1 training performance table (SDK 2.24), "
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/"
            "trn1-training-performance.html",
        ),
    ),
    "decode": (
        (
            "Llama-3.3-70B decode, time per output token (p50)",
            3.0,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/libraries/nxd-inference/"
            "tutorials/trn2-llama3.3-70b-tutorial.html",
        ),
        (
            "Llama-3.1-405B decode, time per output token (p50)",
            1.59,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/libraries/nxd-inference/"
            "tutorials/trn2-llama3.1-405b-speculative-tutorial.html",
        ),
    ),
    "prefill": (
        (
            "Llama-3.3-70B prefill, time to first token (p50)",
            0.76,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/libraries/nxd-inference/"
            "tutorials/trn2-llama3.3-70b-tutorial.html",
        ),
        (
            "Llama-3.1-405B prefill, time to first token (p50)",
            0.66,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/libraries/nxd-inference/"
            "tutorials/trn2-llama3.1-405b-speculative-tutorial.html",
        ),
    ),
}


def kind_of(anchor: str) -> str:
    """The kind of work of a validation row (as ``workload_bands`` sorts them)."""
    a = anchor.lower()
    return next((k for k in ("training", "decode", "prefill") if k in a), "kernel")


def backing_rows(rows=None) -> dict:
    """``BACKING`` computed from the validation rows (traces the workloads): print it to
    refresh the stored table after the validation set changes."""
    from . import validation

    rows = validation.all_rows() if rows is None else rows
    out: dict = {}
    for r in rows:
        out.setdefault(kind_of(r.anchor), []).append((r.anchor, round(speed_ratio(r), 2), r.source))
    return {k: tuple(v) for k, v in out.items()}


def backing(kind: str, generation: str = "trn2") -> list:
    """The published runs a range of ``kind`` comes from: [{run, speed_ratio, source}]
    (collectives: the nccom-test validation rows of ``generation``, Trn2's for Trn3)."""
    if kind == "collective":
        from . import collective_data as data
        from .collective_validation import speed_ratio as ratio

        rows = [r for r in data.VALIDATION if r.gen == generation] or [
            r for r in data.VALIDATION if r.gen == "trn2"
        ]
        return [
            {
                "run": f"{r.gen} {r.op}, {r.ranks} ranks, {r.size:,} B ({r.series})",
                "speed_ratio": round(ratio(r), 2),
                "source": "nccom-test (perf/collective_data.py)",
            }
            for r in rows
        ]
    if kind not in BACKING:
        raise ValueError(f"unknown kind of work {kind!r}; one of {', '.join(KINDS)}")
    return [{"run": a, "speed_ratio": s, "source": src} for a, s, src in BACKING[kind]]
