"""The verdict block at the top of every output: four questions answered from the report.

- Will it run?  no when a blocking item holds (each with its file:line), else yes;
- Will it be fast?  the modeled step (labelled modeled) and what slows it -- with the
  launch- or fp32-bound finding and its lever's modeled gain (advice.py) --, or why the
  figures are withheld;
- Does it match?  the numerics verdict, or "not compared" with the reason;
- Does it fit?  the memory fit per profile.

It only reads the finished report (readiness items, sections), so the terminal, JSON and
HTML say the same thing."""

from __future__ import annotations

#: readiness topics answered by other questions than "Will it run?"
_OTHER_TOPICS = ("numerics", "memory")


def build(rep: dict) -> dict:
    return {
        "will_it_run": _run(rep),
        "will_it_be_fast": _fast(rep),
        "does_it_match": _match(rep),
        "does_it_fit": _fit(rep),
        "cheapest": _cheapest(rep),
    }


def _cheapest(rep: dict) -> dict | None:
    """The projection's recommendation (build.recommendation): modeled, price source shown."""
    from .build import recommendation_text

    pr = rep.get("fake_projection") or rep.get("projection") or {}
    rec = None if pr.get("withheld") else pr.get("recommendation")
    return {**rec, "text": recommendation_text(rec)} if rec else None


def _run(rep: dict) -> dict:
    fails = [
        i["item"]
        for i in rep.get("readiness") or []
        if i["status"] == "fail" and i.get("topic") not in _OTHER_TOPICS
    ]
    if fails:
        return {"answer": "no", "detail": f"{len(fails)} blocking item(s)", "items": fails}
    return {"answer": "yes", "detail": "no blocking item", "items": []}


def _fast(rep: dict) -> dict:
    fk = rep.get("fake_projection")
    pr = fk or rep.get("projection") or {}
    if pr.get("withheld"):
        return {"answer": "unknown", "detail": pr["withheld"], "items": []}
    errors = pr.get("report_errors") or [
        r["report_error"] for r in pr.get("profiles", []) if r.get("report_error")
    ]
    rows = [r for r in pr.get("profiles") or [] if r.get("step_s")]
    if not rows:
        return {
            "answer": "unknown",
            "detail": "no modeled step time" + (f" ({errors[0]})" if errors else ""),
            "items": errors,
        }
    best = min(rows, key=lambda r: r["step_s"])
    detail = (
        f"modeled (not measured): {best['step_s'] * 1e3:,.3f} ms per step on {best['profile']}, "
        f"MFU {best['mfu']:.1%}"
    )
    slow = [
        i["item"]
        for i in rep.get("readiness") or []
        if i["status"] == "warn"
        and any(
            k in i["item"] for k in ("host sync", "graph break", "recompilation", "data dependence")
        )
    ]
    # what bounds the step and the lever with its modeled gain (advice.py), biggest first
    slow += [a["text"] for a in pr.get("advice") or []]
    pl = rep.get("placement") or {}
    if pl.get("fallback_calls"):
        slow.insert(
            0,
            f"CPU fallbacks take {pl['fallback_share_of_modeled_time']:.1%} of the modeled time",
        )
    return {"answer": "slowed" if slow else "yes", "detail": detail, "items": slow + errors}


def _match(rep: dict) -> dict:
    if rep.get("mode") == "fake":
        return {"answer": "not compared", "detail": "--fake computes no values", "items": []}
    nu = rep.get("numerics") or {}
    v = nu.get("verdict")
    if v == "pass":
        worst = max(nu.get("comparisons") or [], key=lambda x: x["max_rel_diff"], default=None)
        detail = "within the tolerances" + (
            f" (worst {worst['quantity']} {worst['max_rel_diff']:.2e} of {worst['rtol']:g})"
            if worst
            else ""
        )
        return {"answer": "yes", "detail": detail, "items": []}
    if v == "fail":
        bad = [
            f"{x['a']} vs {x['b']} {x['quantity']}: max rel {x['max_rel_diff']:.2e} > {x['rtol']:g}"
            for x in nu.get("comparisons") or []
            if not x["pass"]
        ]
        return {"answer": "no", "detail": "beyond the tolerances", "items": bad}
    if not nu.get("runs") and not nu.get("note"):  # no reference was asked for
        return {"answer": "not compared", "detail": "add --reference cpu", "items": []}
    reason = nu.get("verdict_reason") or nu.get("note") or ""
    return {"answer": "not compared", "detail": reason.removeprefix("not compared: "), "items": []}


def _fit(rep: dict) -> dict:
    fk = rep.get("fake_projection")
    if fk:
        yes = [r["profile"] for r in fk.get("profiles") or [] if r.get("fits")]
        lay = fk.get("layout") or {}
        detail = (
            f"estimate: {lay.get('memory_per_core_estimate', 0) / 2**30:,.2f} GiB per core at "
            f"FSDP {lay.get('fsdp_degree')} x TP {lay.get('tensor_parallel_degree')}"
        )
        return {"answer": "yes" if yes else "no", "detail": detail, "items": yes}
    me = rep.get("memory") or {}
    fit = me.get("fit") or []
    if not fit or not me.get("peak_allocated"):
        return {"answer": "unknown", "detail": "no device memory was allocated", "items": []}
    yes = [f["profile"] for f in fit if f["fits_one_core"]]
    detail = f"peak {me['peak_allocated'] / 2**20:,.1f} MiB per core"
    if yes:
        return {"answer": "yes", "detail": detail + "; fits one core of", "items": yes}
    notes = [f"{f['profile']}: {f.get('fsdp_note', '')}" for f in fit]
    return {"answer": "no", "detail": detail + "; fits one core of no profile", "items": notes}


QUESTIONS = (
    ("will_it_run", "Will it run?"),
    ("will_it_be_fast", "Will it be fast?"),
    ("does_it_match", "Does it match?"),
    ("does_it_fit", "Does it fit?"),
)


def lines(v: dict) -> list:
    """The block as text lines (the terminal summary; the HTML renders the same fields)."""
    out = []
    for key, question in QUESTIONS:
        a = v.get(key) or {}
        out.append(f"{question:<17} {a.get('answer', '?').upper()}: {a.get('detail', '')}")
        out += [f"    - {x}" for x in a.get("items") or []][:8]
    if v.get("cheapest"):
        out.append(f"{'Cheapest?':<17} {v['cheapest']['text']}")
    return out
