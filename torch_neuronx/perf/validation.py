"""The model beside every public reference figure we found (docs/perf-model.md's table).

``python -m torch_neuronx.perf.validation`` prints the table in Markdown. Nothing here ran on a
Trainium: each "modeled" figure is what this model predicts for the same work, computed from
the hardware table; the "published" figure is AWS's (or, where marked, a third party's).

Workloads (``perf/workload_data.py``: calibration, validation and excluded rows) are costed by
``perf/workloads.py``: transformer layers traced once with ``make_fx`` on fake tensors -- the
same ATen graph ``torch.compile`` would hand the backend -- planned by ``perf/graph.py``, with
the tensor-parallel and data-parallel collectives the published configuration implies added
through the collective model. Every modeling choice the published configuration does not pin
down is stated in the row's note.
"""

from __future__ import annotations

import dataclasses
import math

import torch

from torch_neuronx.runtime import hardware as hw
from torch_neuronx.runtime.engines import Engine

from . import estimate, params, serving_fit, tails, workload_data, workloads
from . import serving as serving_term
from .target import for_instance


@dataclasses.dataclass(frozen=True)
class Row:
    anchor: str
    setup: str
    published: float
    modeled: float
    unit: str
    source: str
    note: str = ""

    @property
    def ratio(self) -> float:
        return self.modeled / self.published


# --- chip peaks and bandwidth -------------------------------------------------------------------
_REP = {"trn1": "trn1.32xlarge", "trn2": "trn2.48xlarge", "trn3": "trn3.48xlarge"}


def peak_rows() -> list:
    """The hardware table reproduced: per-core peaks x cores at the tile rule's ideal (no fitted
    TensorE efficiency: these rows check the table, not what a kernel achieves)."""
    with params.override(tensor_efficiency=1.0):
        return _peak_rows()


def _peak_rows() -> list:
    rows = []
    for gen, inst in _REP.items():
        chip = hw.CHIPS[gen]
        tgt = for_instance(inst, 1)  # one physical core per logical core; x cores per chip
        cores = chip.physical_cores
        for cls, dtype in (
            ("bf16", torch.bfloat16),
            ("fp8", torch.float8_e4m3fn),
            ("fp32", torch.float32),
        ):
            fig = chip.peak.get(cls)
            if fig is None or fig.value is None:
                continue
            c = estimate.estimate_op("mm", [(8192, 8192), (8192, 8192)], dtype, tgt, in_graph=True)
            rows.append(
                Row(
                    f"{chip.chip_name} dense {cls.upper()} peak",
                    f"8192^3 matmul per core x {cores} cores, compiled kernel",
                    fig.value / 1e12,
                    c.flops / c.duration * cores / 1e12,
                    "TFLOP/s",
                    fig.cite(),
                    "the model uses per-core peaks x cores"
                    + ("; chip figure is derived" if fig.kind == "derived" else ""),
                )
            )
        if "mxfp8" in chip.peak:
            from . import events as ev
            from . import roofline

            f = 2.0 * 8192**3
            w = ev.Work(
                "mm",
                ev.KERNEL,
                Engine.tensor,
                flops=f,
                bytes=3 * 8192 * 8192,
                dtype="mxfp8",
                mm_dims=((1, 8192, 8192, 8192),),
            )
            c = roofline.cost_of(w, tgt.core, in_graph=True)
            rows.append(
                Row(
                    f"{chip.chip_name} dense MXFP8 peak",
                    f"8192^3 MXFP8 matmul per core x {cores} cores",
                    chip.peak["mxfp8"].value / 1e12,
                    f / c.duration * cores / 1e12,
                    "TFLOP/s",
                    chip.peak["mxfp8"].cite(),
                    "per-core 315 TFLOPS x 8",
                )
            )
        n = 256 << 20
        c = estimate.estimate_op("add", [(n,), (n,)], torch.bfloat16, tgt, in_graph=True)
        rows.append(
            Row(
                f"{chip.chip_name} HBM bandwidth",
                f"bf16 a+b, 2 x {n >> 20}M elements per core x {cores}",
                chip.hbm_bw.value / 1e9,
                c.bytes / c.duration * cores / 1e9,
                "GB/s",
                chip.hbm_bw.cite(),
                "Trn3: capped by the cores' DMA bandwidth (8 x 528 GB/s [DMA])"
                if gen == "trn3"
                else "",
            )
        )
    return rows


def kernel_rows() -> list:
    tgt = for_instance("trn2.48xlarge", 1)
    c = estimate.estimate_op("mm", [(2048, 2048), (2048, 2048)], torch.bfloat16, tgt, in_graph=True)
    eff = c.flops / c.duration / tgt.core.tensor_peak("bf16")
    return [
        Row(
            "single-kernel efficiency, 2048^3 BF16 NKI matmul",
            "one NeuronCore-v3 (LNC=1), Trn2",
            90.9,
            eff * 100,
            "% of peak",
            "third-party (public NKI kernel-tuning repositories; unverified)",
            "model: the tile rule x the fitted TensorE efficiency + one kernel overhead",
        )
    ]


# --- published workloads (perf/workload_data.py), costed by perf/workloads.py ------------------
def workload_rows(rows=None) -> list:
    """(published row, modeled value) for every published workload, calibration, validation and
    excluded alike."""
    rows = workload_data.ROWS if rows is None else rows
    return [(r, workloads.predict(r)) for r in rows]


def all_rows() -> list:
    """The single-kernel and chip rows (``Row``): peaks, bandwidth, kernel efficiency."""
    return peak_rows() + kernel_rows()


def _geomean(xs) -> float:
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def workload_summary(pairs=None) -> dict:
    """{(split, kind): {"n", "geomean", "worst", "lo", "hi"}} of modeled / published speed."""
    pairs = workload_rows() if pairs is None else pairs
    out: dict = {}
    for r, v in pairs:
        out.setdefault((r.split, r.kind), []).append(workloads.speed_ratio(r, v))
    return {
        k: {
            "n": len(q),
            "geomean": _geomean(q),
            "worst": max(q, key=lambda x: abs(math.log(x))),
            "lo": min(q),
            "hi": max(q),
        }
        for k, q in sorted(out.items())
    }


def workload_markdown(pairs=None) -> str:
    pairs = workload_rows() if pairs is None else pairs
    out = [
        "| set | kind | gen | reference | setup | published | modeled | unit | "
        "modeled / published speed | serving stack (optional, not in modeled) | source | note |",
        "|---|---|---|---|---|---:|---:|---|---:|---|---|---|",
    ]
    for r, v in pairs:
        serving = (
            (
                serving_term.describe()
                if r.kind == "prefill"
                else f"+{workloads.SERVING_PER_CALL_S * 1e3:.3g} ms per graph call in synchronous "
                "mode [ASYNC]; not compared (async mode hides it)"
            )
            + (f"; {tails.describe(r.kind, r.percentile)}" if r.percentile != "p50" else "")
            if r.serving
            else ""
        )
        out.append(
            f"| {r.split} | {r.kind} | {r.gen} | {r.anchor} | {r.setup} | {r.value:,.4g} | "
            f"{v:,.4g} | {r.unit} | {workloads.speed_ratio(r, v):.2f} | {serving} | {r.source} | "
            f"{r.note} |"
        )
    out += ["", "| set | kind of work | rows | geomean speed ratio | worst row | range |"]
    out += ["|---|---|---:|---:|---:|---|"]
    for (split, kind), s in workload_summary(pairs).items():
        out.append(
            f"| {split} | {kind} | {s['n']} | {s['geomean']:.2f} | {s['worst']:.2f} | "
            f"{s['lo']:.2f}-{s['hi']:.2f} |"
        )
    return "\n".join(out)


#: the issue's criterion on rows the fit never saw: geometric mean of modeled / published speed
#: within this band per kind of work, and no single row off by more than ``WORST`` either way
CRITERION = (0.8, 1.25)
WORST = 2.0


def _stats(q) -> dict:
    return {
        "n": len(q),
        "geomean": _geomean(q),
        "worst": max(q, key=lambda x: abs(math.log(x))),
        "lo": min(q),
        "hi": max(q),
    }


def never_fitted_summary(pairs=None) -> dict:
    """{(set, kind): stats} of modeled / published speed on the rows the fit never saw, per kind
    of work (training, decode, prefill, collectives): the held-out set alone (collected after the
    fit and the exclusions), the validation set, and both together."""
    from . import collective_data
    from . import collective_validation as cv

    pairs = workload_rows() if pairs is None else pairs
    sets: dict = {}
    for r, v in pairs:
        if r.split in ("validation", workload_data.HELD_OUT):
            q = workloads.speed_ratio(r, v)
            sets.setdefault(("validation + held-out", r.kind), []).append(q)
            sets.setdefault((r.split, r.kind), []).append(q)
    held = [cv.speed_ratio(r) for r in collective_data.HELDOUT]
    val = [cv.speed_ratio(r) for r in collective_data.VALIDATION]
    sets[("held-out", "collectives")] = held
    sets[("validation", "collectives")] = val
    sets[("validation + held-out", "collectives")] = held + val
    order = ("training", "decode", "prefill", "collectives")
    first = ("held-out", "validation", "validation + held-out")
    keys = sorted(sets, key=lambda k: (first.index(k[0]), order.index(k[1])))
    return {k: _stats(sets[k]) for k in keys}


def never_fitted_markdown(pairs=None) -> str:
    lo, hi = CRITERION
    out = [
        "| set | kind of work | rows | geomean speed ratio | worst row | range | "
        f"criterion (geomean in [{lo}, {hi}], no row off by > {WORST:g}x) |",
        "|---|---|---:|---:|---:|---|---|",
    ]
    for (name, kind), s in never_fitted_summary(pairs).items():
        met = lo <= s["geomean"] <= hi and 1 / WORST <= s["lo"] and s["hi"] <= WORST
        out.append(
            f"| {name} | {kind} | {s['n']} | {s['geomean']:.2f} | {s['worst']:.2f} | "
            f"{s['lo']:.2f}-{s['hi']:.2f} | {'met' if met else '**not met**'} |"
        )
    return "\n".join(out)


def markdown(rows: list | None = None) -> str:
    rows = all_rows() if rows is None else rows
    out = [
        "| reference | setup | published | modeled | unit | modeled / published | source | note |",
        "|---|---|---:|---:|---|---:|---|---|",
    ]
    for r in rows:
        out.append(
            f"| {r.anchor} | {r.setup} | {r.published:,.4g} | {r.modeled:,.4g} | {r.unit} | "
            f"{r.ratio:.2f} | {r.source} | {r.note} |"
        )
    return "\n".join(out)


def hardware_markdown() -> str:
    """The main figures of each generation side by side, with their sources (docs)."""
    chips = [hw.CHIPS[g] for g in ("trn1", "trn2", "trn3")]

    def cell(fig, scale=1.0, unit=""):
        if fig is None or fig.value is None:
            return "n/a"
        return f"{fig.value / scale:,.4g} {unit} {fig.cite()}".strip()

    rows = [
        ("NeuronCore", [c.core.name for c in chips]),
        (
            "physical cores per chip; LNC allowed (default)",
            [
                f"{c.physical_cores}; {'/'.join(map(str, c.lnc_allowed))} ({int(c.default_lnc.value)}) "
                f"{c.default_lnc.cite()}"
                for c in chips
            ],
        ),
        (
            "TensorE BF16/FP16 per core",
            [cell(c.core.tensor_peak["bf16"], 1e12, "TFLOP/s") for c in chips],
        ),
        (
            "TensorE FP8 per core",
            [cell(c.core.tensor_peak.get("fp8"), 1e12, "TFLOP/s") for c in chips],
        ),
        (
            "TensorE MXFP8 per core",
            [cell(c.core.tensor_peak.get("mxfp8"), 1e12, "TFLOP/s") for c in chips],
        ),
        (
            "TensorE FP32 per core",
            [cell(c.core.tensor_peak["fp32"], 1e12, "TFLOP/s") for c in chips],
        ),
        (
            "TensorE / VectorE / ScalarE / GpSimdE clock",
            [
                f"{c.core.tensor_clock.value / 1e9:g} / {c.core.vector_clock.value / 1e9:g} / "
                f"{c.core.scalar_clock.value / 1e9:g} / {c.core.gpsimd_clock.value / 1e9:g} GHz "
                f"{c.core.vector_clock.cite()}"
                for c in chips
            ],
        ),
        (
            "SBUF / PSUM per core",
            [
                f"{c.core.sbuf.value / 2**20:g} / {c.core.psum.value / 2**20:g} MiB "
                f"{c.core.sbuf.cite()}"
                for c in chips
            ],
        ),
        ("DMA per core", [cell(c.core.dma_bw, 1e9, "GB/s") for c in chips]),
        ("HBM per chip", [cell(c.hbm_capacity, 2**30, "GiB") for c in chips]),
        ("HBM bandwidth per chip", [cell(c.hbm_bw, 1e12, "TB/s") for c in chips]),
        (
            "chip BF16 / FP32 peak (published)",
            [
                f"{c.peak['bf16'].value / 1e12:g} / {c.peak['fp32'].value / 1e12:g} TFLOP/s {c.peak['bf16'].cite()}"
                for c in chips
            ],
        ),
        (
            "NeuronLink per chip (intra-instance)",
            [cell(c.neuronlink_bw, 1e9, "GB/s") for c in chips],
        ),
        ("EFA per chip", [cell(c.efa_bw_per_chip, 1e9, "GB/s") for c in chips]),
        ("host link per chip", [cell(c.host_link_bw, 1e9, "GB/s") for c in chips]),
        (
            "hop latency: cores of a chip / chips / instances",
            [
                f"{c.on_chip_latency.value * 1e6:g} / {c.neuronlink_latency.value * 1e6:g} / "
                f"{c.efa_latency.value * 1e6:g} us (assumption / [INTRA] / [COLL, INTER])"
                for c in chips
            ],
        ),
    ]
    out = [
        "| figure | Trn1 (Trainium) | Trn2 (Trainium2) | Trn3 (Trainium3) |",
        "|---|---|---|---|",
    ]
    out += [f"| {name} | " + " | ".join(vals) + " |" for name, vals in rows]
    out += ["", "| instance | chips | price (USD/h) | price source |", "|---|---:|---:|---|"]
    for inst in hw.INSTANCES.values():
        p = inst.price_usd_per_hour
        out.append(
            f"| {inst.name}{' (emulated profile)' if inst.emulated else ''} | {int(inst.chips.value)} | "
            f"{'none found' if p.value is None else f'{p.value:g}'} | {p.cite()}: {p.note} |"
        )
    return "\n".join(out)


def sources_markdown() -> str:
    return "\n".join(
        ["| key | public source |", "|---|---|"] + [f"| {k} | {v} |" for k, v in hw.SOURCES.items()]
    )


def tails_markdown() -> str:
    """The published p50/p99 pairs behind the tail factor (``perf/tails.py``) and the factor
    of each kind, with and without the usability test."""
    out = [
        "| run | kind (LLMPerf metric) | p50 | p95 | p99 | max | p99 / p50 | used | source |",
        "|---|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for p in tails.PAIRS:
        out.append(
            f"| {p.run} | {p.kind} ({tails.METRIC[p.kind]}) | {p.p50:.4g} s | {p.p95:.4g} s | "
            f"{p.p99:.4g} s | {p.max:.4g} s | {p.ratio:.3f} | {p.why} | {p.source} |"
        )
    out += ["", "| kind | p99 tail factor (applied) | range | without the usability test |"]
    out += ["|---|---:|---|---:|"]
    for kind in tails.METRIC:
        f, u = tails.FACTORS[kind], tails.unscreened(kind)
        applied = f"{f['factor']:.3f}" if f else "none (compared as a median)"
        rng = f"{f['lo']:.3f}-{f['hi']:.3f} ({f['n']} runs)" if f else "-"
        out.append(
            f"| {kind} | {applied} | {rng} | {u['factor']:.3g} ({u['lo']:.3g}-{u['hi']:.3g}) |"
        )
    return "\n".join(out)


def serving_markdown(pairs=None) -> str:
    """The serving-stack term (``perf/serving.py``): each serving-stack TTFT row with its modeled
    device time, the dispatch and the rest (published - device - dispatch), and the fitted term."""
    pairs = workload_rows() if pairs is None else pairs
    out = [
        "| set | run | prompt / bucket (tokens) | published TTFT | modeled device TTFT | dispatch "
        "| published - device - dispatch | modeled / published speed (term on) | source |",
        "|---|---|---|---:|---:|---:|---:|---:|---|",
    ]
    d = serving_term.DISPATCH_S * 1e3
    for r, v in pairs:
        if not (r.serving and r.kind == "prefill"):
            continue
        out.append(
            f"| {r.split} | {r.model} ({r.percentile}), {r.setup} | {r.tokens:,} / "
            f"{max(r.tokens, r.bucket):,} | {r.value:,.4g} ms | {v:,.4g} ms | {d:.3g} ms | "
            f"{serving_fit.residual_s(r, v) * 1e3:,.4g} ms | "
            f"{workloads.speed_ratio(r, v):.2f} | {r.source} |"
        )
    f = serving_fit.fit([r for r, _ in pairs])
    out += [
        "",
        "| term | value | from |",
        "|---|---:|---|",
        f"| graph dispatch (synchronous mode) | {d:.3g} ms | [ASYNC] (measured, vLLM on top) |",
        f"| per request, fitted (applied) | {serving_term.PER_REQUEST_S * 1e3:.4g} ms | mean of "
        f"{f['n']} calibration row(s): {serving_term.PROVENANCE} |",
    ]
    return "\n".join(out)


#: docs/perf-model.md's generated blocks: name -> function giving the block's text
def _blocks() -> dict:
    from .collective_validation import both_markdown

    return {
        "hardware": lambda: hardware_markdown(),
        "sources": lambda: sources_markdown(),
        "kernels": lambda: markdown(),
        "workloads": lambda: workload_markdown(),
        "collectives": lambda: both_markdown(),
        "never-fitted": lambda: never_fitted_markdown(),
        "tails": lambda: tails_markdown(),
        "serving": lambda: serving_markdown(),
    }


def write_docs(path) -> None:
    """Replace every ``<!-- generated:NAME -->`` ... ``<!-- /generated:NAME -->`` block of the
    file at ``path`` with its freshly computed table (``python -m torch_neuronx.perf.validation
    --write docs/perf-model.md``: the one command that regenerates the doc's tables)."""
    from pathlib import Path

    p = Path(path)
    text = p.read_text()
    for name, make in _blocks().items():
        start, end = f"<!-- generated:{name} -->", f"<!-- /generated:{name} -->"
        i, j = text.find(start), text.find(end)
        if i < 0 or j < i:
            raise ValueError(f"{path}: no {start} ... {end} block")
        text = text[: i + len(start)] + "\n" + make() + "\n" + text[j:]
    p.write_text(text)


if __name__ == "__main__":  # pragma: no cover
    import sys

    if len(sys.argv) == 3 and sys.argv[1] == "--write":
        write_docs(sys.argv[2])
        sys.exit(0)
    print(hardware_markdown())
    print()
    print(sources_markdown())
    print()
    print(markdown())
    print()
    print(workload_markdown())
    print()
    from .collective_validation import both_markdown

    print(both_markdown())
    print()
    print(f"(model parameters: {params.current()})")
