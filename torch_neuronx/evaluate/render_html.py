"""One self-contained HTML file: no scripts or styles fetched from anywhere, plots inlined as
base64 PNG (matplotlib, the optional ``report`` extra). Without matplotlib the file has the
tables only and says how to get the plots."""

from __future__ import annotations

import base64
import html
import io
import json

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
.note{color:#555;font-size:13px}pre{background:#f7f7f7;padding:8px;overflow-x:auto;font-size:12px}
section{border-top:2px solid #ddd;margin-top:1.5em}.proj{background:#fff7e0;padding:4px 8px}"""


def _e(x) -> str:
    return html.escape(str(x))


def _table(headers, rows) -> str:
    out = ["<table><tr>" + "".join(f"<th>{_e(h)}</th>" for h in headers) + "</tr>"]
    for r in rows:
        out.append("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in r) + "</tr>")
    return "".join(out) + "</table>"


def _gib(n) -> str:
    return "n/a" if n is None else f"{n / 2**30:,.3f} GiB"


def _ms(s) -> str:
    return "n/a" if s is None else f"{s * 1e3:,.3f} ms"


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
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    if ax.get_legend_handles_labels()[0]:
        ax.legend()
    ax.set_title("loss: neuron vs reference")
    out["loss_curves"] = _img(fig, "loss_curves")
    plt.close(fig)
    by_op = (rep.get("projection") or {}).get("by_op") or []
    fig, ax = plt.subplots(figsize=(6, 3.5))
    top = by_op[:12][::-1]
    ax.barh([r["name"][:40] for r in top], [r["modeled_s"] * 1e3 for r in top])
    ax.set_xlabel("modeled ms (emulated profile, whole run)")
    ax.set_title("modeled time by op")
    out["time_by_op"] = _img(fig, "time_by_op")
    plt.close(fig)
    tl = (rep.get("memory") or {}).get("timeline") or []
    fig, ax = plt.subplots(figsize=(6, 3))
    for d in sorted({p["device"] for p in tl}):
        pts = [p for p in tl if p["device"] == d]
        ax.plot(
            [p["t_s"] for p in pts],
            [p["allocated"] / 2**20 for p in pts],
            label=f"neuron:{d} allocated",
        )
        ax.plot(
            [p["t_s"] for p in pts],
            [p["reserved"] / 2**20 for p in pts],
            "--",
            label=f"neuron:{d} reserved",
        )
    ax.set_xlabel("wall s")
    ax.set_ylabel("MiB")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
    ax.set_title("device memory over time")
    out["memory_timeline"] = _img(fig, "memory_timeline")
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(6, 3))
    co = rep.get("compilation") or {}
    labels = ["compile cold", "compile warm cache", "cold step", "warm step", "steady step"]
    vals = [
        co.get("compile_cold_s") or 0,
        co.get("compile_warm_cache_s") or 0,
        co.get("cold_step_s") or 0,
        co.get("warm_step_s") or 0,
        co.get("steady_state_step_s") or 0,
    ]
    ax.bar(labels, vals)
    ax.set_ylabel("wall s (this host)")
    ax.set_title("compile vs steady-state time")
    out["compile_vs_steady"] = _img(fig, "compile_vs_steady")
    plt.close(fig)
    return out


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
        parts.append(
            f"<h3 class='fail'>The script raised {_e(rep['error']['type'])}</h3>"
            f"<pre>{_e(rep['error']['traceback'])}</pre>"
        )
    if not pl:
        parts.append(
            "<p class='note' id='no-plots'>Plots need matplotlib: <code>pip install "
            "'torch-neuronx[report]'</code> (or <code>pip install matplotlib</code>), then run again.</p>"
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
    p = rep.get("placement") or {}
    parts.append(
        _section(
            "placement",
            (
                f"<p>{p.get('native_calls', 0)} native op calls, {p.get('fallback_calls', 0)} CPU-fallback calls "
                f"({p.get('fallback_share_of_calls', 0):.2%} of calls, {p.get('fallback_share_of_modeled_time', 0):.2%} "
                f"of modeled device time).</p><p>{_e(p.get('strict_mode', ''))}</p><h3>Fallback ops</h3>"
                + _sites(p.get("fallback_ops") or [])
                + "<h3>Most frequent native ops</h3>"
                + _table(
                    ["op", "calls"],
                    [[r["name"], r["count"]] for r in p.get("top_native_ops") or []],
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
            else "<p>not collected</p>",
        )
    )
    h = rep.get("host_sync") or {}
    parts.append(
        _section(
            "host_sync",
            (
                f"<p>{h.get('total', 0)} device-to-host reads (driver counter: {_e(h.get('driver_counter'))}); "
                + (
                    "no step counted."
                    if h.get("in_steady_state_per_step") is None
                    else f"{h['in_steady_state_per_step']:g} per steady-state step."
                )
                + f" {_e(h.get('note', ''))}</p>"
                "<h3>Reads</h3>"
                + _sites(h.get("reads") or [])
                + "<h3>Data-dependent output shapes</h3>"
                + _sites(h.get("data_dependent_shapes") or [])
            )
            if h
            else "<p>not collected</p>",
        )
    )
    c = rep.get("compilation") or {}
    parts.append(
        _section(
            "compilation",
            (
                f"<p>{c.get('graphs', 0)} graphs compiled by the neuron backend in {c.get('compile_s', 0):.2f} s "
                f"(cold {c.get('compile_cold_s', 0):.2f} s; {c.get('graphs_from_cache', 0)} from the warm "
                f"cache in {c.get('compile_warm_cache_s', 0):.2f} s) {_e(c.get('warm_cache_note', ''))}; "
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
                    ["name", "function", "nodes", "input shapes", "cache", "compile s"],
                    [
                        [
                            g["name"],
                            g["function"],
                            g["node_count"],
                            g["input_shapes"],
                            g["cache"],
                            f"{g['total_s'] or 0:.3f}",
                        ]
                        for g in c.get("graph_records") or []
                    ],
                )
            )
            if c
            else "<p>n/a</p>",
        )
    )
    n = rep.get("numerics") or {}
    dev = n.get("policy_deviations") or {}
    parts.append(
        _section(
            "numerics",
            (
                f"<p>Verdict: <b class='{_e(n.get('verdict'))}'>{_e(n.get('verdict'))}</b> "
                f"{_e(n.get('verdict_reason', ''))}; tolerances (relative): {_e(json.dumps(n.get('tolerances')))}</p>"
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
                )
                + _table(
                    ["step", "loss (this run)"], [[i, v] for i, v in enumerate(n.get("loss") or [])]
                )
                + "<h3>Deviations by policy</h3>"
                + "".join(
                    f"<p>{_e(k)}: {v['count']} calls &mdash; {_e(v['policy'])}</p>"
                    + _sites(v["ops"])
                    for k, v in dev.items()
                )
            )
            if n
            else "<p>n/a</p>",
        )
    )
    m = rep.get("memory") or {}
    parts.append(
        _section(
            "memory",
            (
                f"<p>Peak allocated {_gib(m.get('peak_allocated'))}, reserved {_gib(m.get('peak_reserved'))} per core; "
                f"static: {_e({k: _gib(v) for k, v in (m.get('static') or {}).items()})}; activations (estimate) "
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
            else "<p>n/a</p>",
        )
    )
    pr = rep.get("projection") or {}
    parts.append(
        _section(
            "projection",
            f"<p class='fail'>Projection {_e(pr['withheld'])}</p>"
            if pr.get("withheld")
            else (
                "<p class='proj'><b>Projection</b>, not a measurement: modeled Trainium time from the performance model "
                f"(emulated profile {_e(pr.get('emulated_profile'))}: {_ms(pr.get('modeled_step_s_emulated'))} per step, "
                f"{pr.get('flops_per_step', 0) / 1e9:,.3f} GFLOP per step).</p>"
                + _proj_table(pr.get("profiles") or [])
                + _recommendation(pr)
                + pl.get("time_by_op", "")
                + _table(
                    ["op", "kind", "count", "modeled ms", "GFLOP"],
                    [
                        [
                            r["name"],
                            r["kind"],
                            r["count"],
                            f"{r['modeled_s'] * 1e3:.4f}",
                            f"{r['flops'] / 1e9:.4f}",
                        ]
                        for r in pr.get("by_op") or []
                    ],
                )
                + "<h3>Assumptions</h3><ul>"
                + "".join(f"<li>{_e(a)}</li>" for a in pr.get("assumptions") or [])
                + "</ul>"
            )
            if pr
            else "<p>n/a</p>",
        )
    )
    fk = rep.get("fake_projection")
    if fk and fk.get("withheld"):  # an incomplete trace: no figures to show (build/cli say why)
        parts.append(
            _section("fake_projection", f"<p class='fail'>Fake projection {_e(fk['withheld'])}</p>")
        )
    elif fk:
        lay = fk["layout"]
        parts.append(
            _section(
                "fake_projection",
                (
                    f"<p class='proj'><b>Projection</b> from one step traced with fake tensors: "
                    f"{fk['flops_per_step'] / 1e12:,.2f} TFLOP, {fk['bytes_per_step'] / 2**30:,.2f} GiB through HBM, "
                    f"{fk['ops']} ops, single-core peak {_gib(fk['peak_memory_single_core'])}; layout FSDP "
                    f"{lay['fsdp_degree']} x TP {lay['tensor_parallel_degree']}: {_gib(lay['memory_per_core_estimate'])} "
                    "per core (estimate).</p>"
                    + _proj_table(fk["profiles"], fake=True)
                    + _recommendation(fk)
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
        )
    parts.append(
        f"<details><summary>Raw steps</summary><pre>{_e(json.dumps(rep.get('steps'), indent=1))}</pre>"
        "</details></body></html>"
    )
    return "".join(parts)


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
        rows.append(
            f"<tr><th>Cheapest?</th><td class='warn'><b>{_e(v['cheapest'].get('profile') or 'n/a')}"
            f"</b></td><td>{_e(v['cheapest']['text'])}</td></tr>"
        )
    return "<h2 id='verdict'>Verdict</h2><table class='verdict'>" + "".join(rows) + "</table>"


def _recommendation(pr: dict) -> str:
    from .build import recommendation_text

    text = recommendation_text(pr.get("recommendation"))
    return f"<p class='proj recommendation'>{_e(text)}</p>" if text else ""


def _proj_table(rows, fake: bool = False) -> str:
    def usd(x):
        return "n/a (no price)" if x is None else f"${x:,.4f}"

    return _table(
        [
            "profile",
            "step (eager)",
            "step (compiled)",
            "MFU",
            "samples/s",
            "tokens/s",
            "USD/1k steps",
            "USD/1M tokens",
            "price/h",
            "billed cores",
        ]
        + (["fits", "instances"] if fake else []),
        [
            [
                r["profile"],
                _ms(r["step_s"]) if not r.get("report_error") else r["report_error"],
                _ms(r.get("compiled_step_s")),
                "n/a" if r.get("mfu") is None else f"{r['mfu']:.1%}",
                f"{r['samples_per_s']:,.1f}" if r.get("samples_per_s") else "n/a",
                f"{r['tokens_per_s']:,.0f}" if r.get("tokens_per_s") else "n/a",
                usd(r.get("usd_per_1000_steps")),
                usd(r.get("usd_per_million_tokens")),
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
