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

from . import units

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
    lk = (best.get("likely") or {}).get("step_s")
    detail = (
        f"modeled (not measured): {units.seconds(best['step_s'])} per step"
        + (f", likely {units.seconds_range(lk)}" if lk else "")
        + f" on {best['profile']}, MFU {best['mfu']:.1%}"
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


def fits(rep: dict) -> tuple:
    """(profiles that fit one core, every profile judged) for any mode: the measured peak
    (memory.fit) or the fake layout's estimate (fake_projection.profiles). The one memory rule
    of the verdict and the ``--fail-on memory`` gate (report.gate)."""
    fk = rep.get("fake_projection")
    if fk is not None:
        rows = [(r["profile"], r["fits"]) for r in fk.get("profiles") or [] if "fits" in r]
    else:
        me = rep.get("memory") or {}
        rows = (
            [(f["profile"], f["fits_one_core"]) for f in me.get("fit") or []]
            if me.get("peak_allocated")
            else []
        )
    return [p for p, ok in rows if ok], [p for p, _ in rows]


def _fit(rep: dict) -> dict:
    yes, judged = fits(rep)
    fk = rep.get("fake_projection")
    if fk is not None:
        if fk.get("withheld") or not judged:  # a crashed trace measured no layout
            why = (fk.get("withheld") or "no profile was projected").removeprefix("withheld: ")
            return {"answer": "unknown", "detail": f"not determined: {why}", "items": []}
        lay = fk.get("layout") or {}
        detail = (
            f"estimate: {units.size(lay.get('memory_per_core_estimate'))} per core at "
            f"FSDP {lay.get('fsdp_degree')} x TP {lay.get('tensor_parallel_degree')}"
        )
        return {"answer": "yes" if yes else "no", "detail": detail, "items": yes}
    me = rep.get("memory") or {}
    if not judged:
        return {
            "answer": "unknown",
            "detail": "not determined: no device memory was allocated",
            "items": [],
        }
    detail = f"peak {units.size(me['peak_allocated'])} per core"
    if yes:
        return {"answer": "yes", "detail": detail + "; fits one core of", "items": yes}
    notes = [f"{f['profile']}: {f.get('fsdp_note', '')}" for f in me.get("fit") or []]
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
        ch = v["cheapest"]
        likely = (
            f"; likely {units.usd_range(ch['likely'])} {ch['unit'].removeprefix('USD ')}"
            if ch.get("likely")
            else ""
        )
        out.append(f"{'Cheapest?':<17} {ch['text']}{likely}")
    return out
