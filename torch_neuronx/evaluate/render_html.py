"""One self-contained HTML file: no scripts or styles fetched from anywhere, plots inlined as
base64 PNG (matplotlib, the optional ``report`` extra). Without matplotlib the file has the
tables only and says how to get the plots."""

from __future__ import annotations

import base64
import html
import io

from . import units
from .build import SECTIONS

TITLES = {
    "placement": "Placement",
    "host_sync": "Host synchronisation",
    "compilation": "Compilation",
    "numerics": "Numerics",
    "memory": "Memory",
    "projection": "Projected Trainium time and cost",
    "readiness": "Readiness",
    "fake_projection": "Full-size projection (fake tensors)",
}

_CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:.5em 0 1em}td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;
text-align:left;vertical-align:top}th{background:#f0f0f0}.pass{color:#176317}.warn{color:#9a6a00}.fail{color:#b00}
.note{color:#555;font-size:13px}.likely{color:#555;font-size:12px}.source{font-size:12px}pre{background:#f7f7f7;padding:8px;overflow-x:auto;font-size:12px}
section{border-top:2px solid #ddd;margin-top:1.5em}.proj{background:#fff7e0;padding:4px 8px}"""


def _e(x) -> str:
    """Escaped text, paths under the working directory relative to it."""
    return html.escape(units.rel(_cell(x)))


def _cell(x) -> str:
    """A value as a reader reads it: yes/no, not True/False; shapes as 2x3; no reprs."""
    if isinstance(x, bool):
        return units.yes_no(x)
    if x is None:
        return "n/a"
    if isinstance(x, (list, tuple)):
        if all(isinstance(v, int) and not isinstance(v, bool) for v in x):
            return "x".join(map(str, x)) or "scalar"
        return ", ".join(_cell(v) for v in x)
    if isinstance(x, dict):
        return ", ".join(f"{k} {_cell(v)}" for k, v in x.items())
    return str(x)


def _table(headers, rows, empty: str = "none") -> str:
    """A table; no rows is a line saying so, never a header row alone."""
    rows = list(rows)
    if not rows:
        return f"<p class='note empty'>{_e(empty)}</p>"
    out = ["<table><tr>" + "".join(f"<th>{_e(h)}</th>" for h in headers) + "</tr>"]
    for r in rows:
        out.append("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in r) + "</tr>")
    return "".join(out) + "</table>"


def _gib(n) -> str:  # a size in the unit that fits it (units.size)
    return units.size(n)


def _ms(s) -> str:  # a time in the unit that fits it (units.seconds)
    return units.seconds(s)


def _plt():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        return plt
    except ImportError:
        return None


def _img(fig, name: str) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80, bbox_inches="tight")
    fig.clf()
    data = base64.b64encode(buf.getvalue()).decode()
    return f'<img class="plot" data-plot="{name}" alt="{name}" src="data:image/png;base64,{data}">'


def plots(rep: dict) -> dict:
    """{plot name: <img> html} (empty without matplotlib)."""
    plt = _plt()
    if plt is None:
        return {}
    out = {}
    for name, fig in figures(rep, plt).items():
        out[name] = _img(fig, name)
        plt.close(fig)
    return out


def figures(rep: dict, plt) -> dict:
    """{plot name: matplotlib figure}. Category labels go on the vertical axis (horizontal
    bars), one row each, so long labels never overlap (tests/evaluate/test_presentation.py
    checks their bounding boxes)."""
    from matplotlib.ticker import MaxNLocator

    out = {}
    steps = rep.get("steps") or []
    nu = rep.get("numerics") or {}
    fig, ax = plt.subplots(figsize=(6, 3))
    runs = nu.get("runs") or {}
    if runs:
        for name, r in runs.items():
            ax.plot(
                [v if v is not None else float("nan") for v in r.get("loss", [])],
                label=name,
                marker=".",
            )
    else:
        ax.plot(
            [s.get("loss") if s.get("loss") is not None else float("nan") for s in steps],
            label="neuron",
            marker=".",
        )
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are whole
    ax.set_xlim(left=0)  # no tick left of the first step (it met the loss axis's labels)
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    ax.set_title("loss per step: neuron vs reference")
    out["loss_curves"] = fig
    by_op = (rep.get("projection") or {}).get("by_op") or []
    top = by_op[:12][::-1]
    fig, ax = plt.subplots(figsize=(6, max(2.0, 0.32 * len(top) + 1.0)))
    ax.barh([_short(r["name"], 40) for r in top], [r["modeled_s"] * 1e3 for r in top])
    ax.set_xlabel("modeled ms, whole run (emulated profile)")
    ax.set_title("modeled time by op, whole run")
    out["time_by_op"] = fig
    tl = (rep.get("memory") or {}).get("timeline") or []
    peak = max([p["reserved"] for p in tl] + [1])
    unit, scale = units.size_unit(peak)
    fig, ax = plt.subplots(figsize=(6, 3))
    for d in sorted({p["device"] for p in tl}):
        pts = [p for p in tl if p["device"] == d]
        ax.plot(
            [p["t_s"] for p in pts],
            [p["allocated"] / scale for p in pts],
            label=f"neuron:{d} allocated",
        )
        ax.plot(
            [p["t_s"] for p in pts],
            [p["reserved"] / scale for p in pts],
            "--",
            label=f"neuron:{d} reserved",
        )
    ax.set_xlabel("wall s (this host)")
    ax.set_ylabel(unit)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
    ax.set_title("device memory over time")
    out["memory_timeline"] = fig
    co = rep.get("compilation") or {}
    labels = ["compile (cold)", "compile (warm cache)", "first step", "second step", "steady step"]
    vals = [
        co.get("compile_cold_s") or 0,
        co.get("compile_warm_cache_s") or 0,
        co.get("cold_step_s") or 0,
        co.get("warm_step_s") or 0,
        co.get("steady_state_step_s") or 0,
    ]
    fig, ax = plt.subplots(figsize=(6, 2.6))
    ax.barh(labels[::-1], vals[::-1])
    ax.set_xlabel("wall s (this host)")
    ax.set_title("compile vs steady-state time")
    out["compile_vs_steady"] = fig
    from matplotlib.ticker import FuncFormatter

    for name, f in out.items():
        for ax in f.axes:
            ax.tick_params(axis="x", pad=8)  # clear of the lowest y label at the axes' corner
            if name != "loss_curves":  # few, short figures: long ones ran into each other
                ax.xaxis.set_major_locator(MaxNLocator(nbins=4))
                ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.3g}"))
        f.tight_layout()
    return out


def _short(name: str, n: int) -> str:
    return name if len(name) <= n else name[: n - 3] + "..."


def _sites(rows) -> str:
    return (
        _table(
            ["op / kind", "count", "call sites"],
            [
                [
                    r["name"],
                    r["count"],
                    "; ".join(f"{s['site']} ({s['count']}x): {s['line']}" for s in r["sites"]),
                ]
                for r in rows
            ],
        )
        if rows
        else "<p>none</p>"
    )


def _section(key: str, body: str) -> str:
    return f'<section id="{key}"><h2>{_e(TITLES[key])}</h2>{body}</section>'


def render(rep: dict) -> str:
    pl = plots(rep)
    parts = [
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>torch-neuronx evaluate</title>"
        f"<style>{_CSS}</style></head><body><h1>torch-neuronx evaluate</h1>"
    ]
    parts.append(
        f"<p>{_e(rep.get('mode'))} &middot; status <b>{_e(rep.get('status'))}</b> &middot; "
        f"{_e(rep.get('steps_completed', 0))} steps &middot; emulated "
        f"{_e(rep['emulated']['instance'])} LNC={_e(rep['emulated']['lnc'])} &middot; rank "
        f"{_e(rep.get('rank', 0))}/{_e(rep.get('world_size', 1))} &middot; schema v{rep['schema_version']}"
        f" &middot; {_e(rep.get('created'))}</p>"
    )
    if rep.get("verdict"):
        parts.append(_verdict(rep["verdict"]))
    if rep.get("notice"):
        parts.append(f"<p class='fail'>{_e(rep['notice'])}</p>")
    if rep.get("error"):
        parts.append(_error(rep))
    if not pl:
        parts.append(
            "<p class='note' id='no-plots'>Plots need matplotlib: <code>pip install "
            "'torch-neuronx[report]'</code> (or <code>pip install matplotlib</code>), then run again.</p>"
        )
    fake = rep.get("fake_projection") is not None
    # under --fake no value is computed: the measured sections say so once each, and the
    # full-size projection comes right after the readiness list
    absent = (
        "<p class='note'>not measured under --fake (fake tensors hold no values): see the "
        "full-size projection</p>"
        if fake
        else "<p class='note'>not collected</p>"
    )
    rd = rep.get("readiness") or []
    parts.append(
        _section(
            "readiness",
            "<ul>"
            + "".join(
                f"<li class='{_e(i['status'])}'>[{_e(i['status'])}] {_e(i['item'])}</li>"
                for i in rd
            )
            + "</ul>",
        )
    )
    if fake:
        parts.append(_fake_section(rep["fake_projection"]))
    p = rep.get("placement") or {}
    parts.append(
        _section(
            "placement",
            (
                f"<p>Whole run: {p.get('native_calls', 0):,} native op calls, {p.get('fallback_calls', 0):,} "
                f"CPU-fallback calls ({p.get('fallback_share_of_calls', 0):.2%} of calls, "
                f"{p.get('fallback_share_of_modeled_time', 0):.2%} of modeled device time).</p>"
                f"<p>{_e(p.get('strict_mode', ''))}</p><h3>Fallback ops</h3>"
                + _sites(p.get("fallback_ops") or [])
                + "<h3>Most frequent native ops</h3>"
                + _table(
                    ["op", "calls (whole run)"],
                    [[r["name"], r["count"]] for r in p.get("top_native_ops") or []],
                    empty="not recorded under --fake" if fake else "none",
                )
                + (
                    "<h3>Unsupported features met</h3>"
                    + "".join(f"<p>{_e(r['advice'])}</p>" for r in p["unsupported_features"])
                    + _sites(p["unsupported_features"])
                    if p.get("unsupported_features")
                    else ""
                )
            )
            if p
            else absent,
        )
    )
    h = rep.get("host_sync") or {}
    parts.append(
        _section(
            "host_sync",
            (
                "<p>"
                + (
                    "No step counted"
                    if h.get("in_steady_state_per_step") is None
                    else f"{h['in_steady_state_per_step']:g} device-to-host reads per steady-state step"
                )
                + f" ({h.get('total', 0):,} in the whole run; driver counter "
                f"{_e(h.get('driver_counter'))}). {_e(h.get('note', ''))}</p>"
                "<h3>Reads</h3>"
                + _sites(h.get("reads") or [])
                + "<h3>Data-dependent output shapes</h3>"
                + _sites(h.get("data_dependent_shapes") or [])
            )
            if h
            else absent,
        )
    )
    c = rep.get("compilation") or {}
    parts.append(
        _section(
            "compilation",
            (
                f"<p>{c.get('graphs', 0)} graphs compiled by the neuron backend in {_ms(c.get('compile_s', 0))} "
                f"(cold {_ms(c.get('compile_cold_s', 0))}; {c.get('graphs_from_cache', 0)} from the warm "
                f"cache in {_ms(c.get('compile_warm_cache_s', 0))}) {_e(c.get('warm_cache_note', ''))}; "
                f"cold step {_ms(c.get('cold_step_s'))}, warm step {_ms(c.get('warm_step_s'))}, steady-state step "
                f"{_ms(c.get('steady_state_step_s'))} ({_e(c.get('wall_times_note', ''))}).</p>"
                + pl.get("compile_vs_steady", "")
                + "<h3>Graph breaks</h3>"
                + (
                    _table(
                        ["site", "line", "reason", "hints"],
                        [
                            [g["site"], g["line"], g["reason"], "; ".join(g["hints"])]
                            for g in c.get("graph_breaks") or []
                        ],
                    )
                    if c.get("graph_breaks")
                    else "<p>none</p>"
                )
                + "<h3>Recompilations</h3>"
                + (
                    _table(
                        [
                            "function",
                            "call site",
                            "line",
                            "guard failures (the input that caused it)",
                            "suggestion",
                        ],
                        [
                            [
                                r["function"],
                                r["site"],
                                r["line"],
                                "; ".join(r["reasons"]),
                                r.get("suggestion", ""),
                            ]
                            for r in c.get("recompiles") or []
                        ],
                    )
                    if c.get("recompiles")
                    else "<p>none</p>"
                )
                + "<h3>Graphs</h3>"
                + _table(
                    ["name", "function", "nodes", "input shapes", "cache", "compile time"],
                    [
                        [
                            g["name"],
                            g["function"],
                            g["node_count"],
                            g["input_shapes"],
                            g["cache"],
                            _ms(g["total_s"] or 0),
                        ]
                        for g in c.get("graph_records") or []
                    ],
                )
            )
            if c
            else absent,
        )
    )
    n = rep.get("numerics") or {}
    dev = n.get("policy_deviations") or {}
    parts.append(
        _section(
            "numerics",
            (
                f"<p>Verdict: <b class='{_e(n.get('verdict'))}'>{_e(n.get('verdict'))}</b> "
                f"{_e(n.get('verdict_reason', ''))}; tolerances (relative): "
                + _e(", ".join(f"{k} {v:g}" for k, v in (n.get("tolerances") or {}).items()))
                + "</p>"
                + pl.get("loss_curves", "")
                + _table(
                    ["a", "b", "quantity", "max rel diff", "rtol", "pass"],
                    [
                        [
                            x["a"],
                            x["b"],
                            x["quantity"],
                            f"{x['max_rel_diff']:.3g}",
                            x["rtol"],
                            x["pass"],
                        ]
                        for x in n.get("comparisons") or []
                    ],
                    empty="no comparison (no reference run)",
                )
                + _table(
                    ["step", "loss (this run)"],
                    [
                        [i, "n/a" if v is None else f"{v:.6g}"]
                        for i, v in enumerate(n.get("loss") or [])
                    ],
                    empty="no loss recorded",
                )
                + "<h3>Deviations by policy</h3>"
                + "".join(
                    f"<p>{_e(k.replace('_', ' '))}: {v['count']} calls &mdash; {_e(v['policy'])}</p>"
                    + _sites(v["ops"])
                    for k, v in dev.items()
                )
            )
            if n
            else absent,
        )
    )
    m = rep.get("memory") or {}
    parts.append(
        _section(
            "memory",
            (
                f"<p>Peak allocated {_gib(m.get('peak_allocated'))}, reserved {_gib(m.get('peak_reserved'))} per core; "
                "static: "
                + _e(
                    ", ".join(
                        f"{k.replace('_', ' ')} {_gib(v)}"
                        for k, v in (m.get("static") or {}).items()
                        if k != "parameter_count"
                    )
                    or "n/a"
                )
                + "; activations (estimate) "
                f"{_gib(m.get('activations_estimate'))}.</p>"
                + pl.get("memory_timeline", "")
                + _table(
                    [
                        "profile",
                        "HBM per core",
                        "fits one core",
                        "data parallel",
                        "FSDP (estimate)",
                    ],
                    [
                        [
                            f["profile"],
                            _gib(f["hbm_per_core"]),
                            f["fits_one_core"],
                            f["data_parallel"],
                            f.get("fsdp_note", ""),
                        ]
                        for f in m.get("fit") or []
                    ],
                )
            )
            if m
            else absent,
        )
    )
    pr = rep.get("projection") or {}
    parts.append(
        _section(
            "projection",
            f"<p class='fail'>Projection {_e(pr['withheld'])}</p>"
            if pr.get("withheld")
            else (
                "<p class='proj'><b>Projection per step</b>, not a measurement: modeled Trainium time "
                f"from the performance model (emulated profile {_e(pr.get('emulated_profile'))}: "
                f"{_ms(pr.get('modeled_step_s_emulated'))} per step, "
                f"{(pr.get('flops_per_step') or 0) / 1e9:,.3f} GFLOP per step).</p>"
                + _proj_table(pr.get("profiles") or [])
                + _recommendation(pr)
                + _ranges(pr)
                + "<h3>Modeled time by op, whole run (all steps, the first included)</h3>"
                + pl.get("time_by_op", "")
                + _table(
                    ["op", "kind", "calls", "modeled time, whole run", "GFLOP, whole run"],
                    [
                        [
                            r["name"],
                            r["kind"],
                            r["count"],
                            _ms(r["modeled_s"]),
                            f"{r['flops'] / 1e9:,.4g}",
                        ]
                        for r in pr.get("by_op") or []
                    ],
                )
                + "<h3>Assumptions</h3><ul>"
                + "".join(f"<li>{_e(a)}</li>" for a in pr.get("assumptions") or [])
                + "</ul>"
            )
            if pr
            else absent,
        )
    )
    parts.append(_steps(rep.get("steps") or []) + "</body></html>")
    return "".join(parts)


def _fake_section(fk: dict) -> str:
    """The full-size projection of a --fake trace."""
    if fk.get("withheld"):  # an incomplete trace: no figures to show (report.py says why)
        return _section(
            "fake_projection", f"<p class='fail'>Fake projection {_e(fk['withheld'])}</p>"
        )
    lay = fk["layout"]
    return _section(
        "fake_projection",
        (
            f"<p class='proj'><b>Projection per step</b> from one step traced with fake "
            f"tensors: {fk['flops_per_step'] / 1e12:,.2f} TFLOP, "
            f"{_gib(fk['bytes_per_step'])} through HBM, {fk['ops']:,} ops, single-core peak "
            f"{_gib(fk['peak_memory_single_core'])}; layout FSDP {lay['fsdp_degree']} x TP "
            f"{lay['tensor_parallel_degree']}: {_gib(lay['memory_per_core_estimate'])} "
            "per core (estimate).</p>"
            + _proj_table(fk["profiles"], fake=True)
            + _recommendation(fk)
            + _ranges(fk)
            + (
                _table(
                    ["data dependence (.item() on a fake value)", "count", "line"],
                    [[d["site"], d["count"], d["line"]] for d in fk["data_dependence"]],
                )
                if fk["data_dependence"]
                else ""
            )
            + "<ul>"
            + "".join(f"<li>{_e(a)}</li>" for a in fk["assumptions"])
            + "</ul>"
        ),
    )


def _steps(steps: list) -> str:
    """Each step as a row (report.json has every field)."""
    if not steps:
        return ""
    return (
        "<details><summary>Steps</summary>"
        + _table(
            [
                "step",
                "wall (this host)",
                "modeled device time",
                "loss",
                "gradient norm",
                "host syncs",
                "ops",
            ],
            [
                [
                    s.get("index"),
                    _ms(s.get("wall_s")),
                    _ms(s.get("modeled_device_s")),
                    "n/a" if s.get("loss") is None else f"{s['loss']:.6g}",
                    "n/a" if s.get("grad_norm") is None else f"{s['grad_norm']:.6g}",
                    s.get("host_syncs"),
                    s.get("ops"),
                ]
                + []
                for s in steps
            ],
        )
        + "</details>"
    )


def _error(rep: dict) -> str:
    """What ended the run: its file:line and the first lines of the message; the whole
    traceback folded away (a compiler's error can be 50 lines of IR)."""
    err = rep["error"]
    site = f" at {_e(err['site'])}" if err.get("site") else ""
    if rep.get("status") == "interrupted":
        head = f"The run was interrupted{site}"
    elif err.get("type") in ("os._exit", "signal", "SystemExit"):
        head = f"The script ended{site}"
    else:
        head = f"The script raised {_e(err['type'])}{site}"
    tb = err.get("traceback") or ""
    return (
        f"<h3 class='fail'>{head}</h3><p>{_e(units.first_lines(err.get('message'), 5, 600))}</p>"
        + (f"<details><summary>Traceback</summary><pre>{_e(tb)}</pre></details>" if tb else "")
    )


def _ranges(pr: dict) -> str:
    """How sure: the likely ranges' kind and the published runs behind them."""
    rg = pr.get("range")
    if not rg:
        return ""
    factors = "; ".join(
        f"{g}: x{lo:.2f} to x{hi:.2f} of the modeled time" for g, (lo, hi) in rg["factors"].items()
    )
    rows = [
        [g if g != "all" else "every generation", b["run"], f"{b['speed_ratio']:.2f}", b["source"]]
        for g, runs in (rg.get("backing") or {}).items()
        for b in runs
    ]
    body = "".join(
        "<tr>"
        + "".join(f"<td>{_e(c)}</td>" for c in r[:3])
        + f"<td class='source'>{_e(r[3])}</td></tr>"
        for r in rows
    )
    return (
        f"<h3 id='likely'>How sure: likely ranges</h3><p class='likely'>{_e(rg['label'])} "
        f"({_e(factors)}): the range is how far the model was off on the published runs of "
        "this kind of work below (never used to fit it), not a statistical interval.</p>"
        + (
            "<table class='backing'><tr><th>generation</th><th>published run</th>"
            "<th>modeled speed / published speed</th><th>source</th></tr>" + body + "</table>"
            if rows
            else "<p class='note empty'>no published run of this kind</p>"
        )
    )


def _verdict(v: dict) -> str:
    """The four questions first (verdict.py), each with its answer and items."""
    from .verdict import QUESTIONS

    rows = []
    for key, question in QUESTIONS:
        a = v.get(key) or {}
        cls = {"no": "fail", "yes": "pass"}.get(a.get("answer"), "warn")
        items = "".join(f"<li>{_e(x)}</li>" for x in a.get("items") or [])
        rows.append(
            f"<tr><th>{_e(question)}</th><td class='{cls}'><b>{_e(a.get('answer', '?'))}</b></td>"
            f"<td>{_e(a.get('detail', ''))}{'<ul>' + items + '</ul>' if items else ''}</td></tr>"
        )
    if v.get("cheapest"):
        ch = v["cheapest"]
        likely = (
            f"; likely {units.usd_range(ch['likely'])} {ch['unit'].removeprefix('USD ')}"
            if ch.get("likely")
            else ""
        )
        rows.append(
            f"<tr><th>Cheapest?</th><td class='warn'><b>{_e(ch.get('profile') or 'n/a')}"
            f"</b></td><td>{_e(ch['text'] + likely)}</td></tr>"
        )
    return "<h2 id='verdict'>Verdict</h2><table class='verdict'>" + "".join(rows) + "</table>"


def _recommendation(pr: dict) -> str:
    from .build import recommendation_text

    rec = pr.get("recommendation") or {}
    text = recommendation_text(rec)
    if text and rec.get("likely"):
        text += f"; likely {units.usd_range(rec['likely'])} {rec['unit'].removeprefix('USD ')}"
    return f"<p class='proj recommendation'>{_e(text)}</p>" if text else ""


def _proj_table(rows, fake: bool = False) -> str:
    """One row per profile; every time and cost with its likely range (likely.py)."""

    def with_range(r, key, fmt, rfmt):
        v = r.get(key)
        if v is None:
            return "n/a" + (" (no price)" if key.startswith("usd") else "")
        lk = (r.get("likely") or {}).get(key)
        return fmt(v) + (f" (likely {rfmt(lk)})" if lk else "")

    return _table(
        [
            "profile",
            "step (eager)",
            "step (compiled)",
            "MFU",
            "samples/s",
            "tokens/s",
            "USD per 1k steps",
            "USD per 1M tokens",
            "price per hour",
            "billed cores",
        ]
        + (["fits", "instances"] if fake else []),
        [
            [
                r["profile"],
                r["report_error"]
                if r.get("report_error")
                else with_range(r, "step_s", _ms, units.seconds_range),
                with_range(r, "compiled_step_s", _ms, units.seconds_range),
                "n/a" if r.get("mfu") is None else f"{r['mfu']:.1%}",
                f"{r['samples_per_s']:,.1f}" if r.get("samples_per_s") else "n/a",
                f"{r['tokens_per_s']:,.0f}" if r.get("tokens_per_s") else "n/a",
                with_range(r, "usd_per_1000_steps", units.usd, units.usd_range),
                with_range(r, "usd_per_million_tokens", units.usd, units.usd_range),
                "n/a"
                if r["price_usd_per_hour"] is None
                else f"${r['price_usd_per_hour']:,.3f}"
                + ("" if r.get("price_verified") else " (unverified)"),
                r.get("billed_cores", "n/a"),
            ]
            + ([r["fits"], r["instances_needed"]] if fake else [])
            for r in rows
        ],
    )


assert set(SECTIONS) <= set(TITLES)
