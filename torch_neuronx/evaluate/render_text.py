"""The terminal summary (rich when installed, plain text otherwise) and the progress bar."""

from __future__ import annotations

import sys

from . import units


def _console():
    try:
        from rich.console import Console

        return Console(stderr=False)
    except ImportError:
        return None


class Progress:
    """A step progress bar on stderr (rich), or nothing when rich is missing / not a terminal."""

    def __init__(self, total: int | None, enabled: bool = True):
        self._p = None
        if not enabled:
            return
        try:
            from rich.progress import Progress as RP

            self._p = RP(
                transient=True, console=__import__("rich.console").console.Console(stderr=True)
            )
            self._task = self._p.add_task("evaluating (steps)", total=total)
            self._p.start()
        except ImportError:
            self._p = None

    def __call__(self, n: int, limit: int | None) -> None:
        if self._p is not None:
            self._p.update(self._task, completed=n)

    def close(self) -> None:
        if self._p is not None:
            self._p.stop()


def summary_lines(rep: dict) -> list:
    """The summary as lines: the verdict first, then one line per section. Per-step figures
    and whole-run figures are labelled as such; modeled figures carry their likely range."""
    out = []
    st = rep.get("status")
    out.append(
        f"torch-neuronx evaluate: {rep.get('mode')} | status {st} | "
        f"{rep.get('steps_completed', 0)} steps | emulated {rep['emulated']['instance']} "
        f"LNC={rep['emulated']['lnc']} | rank {rep.get('rank', 0)}/{rep.get('world_size', 1)}"
    )
    if rep.get("verdict"):
        from .verdict import lines

        out += lines(rep["verdict"])
    if rep.get("notice"):
        out.append("NOTE: " + rep["notice"])
    out += _error_lines(rep)
    p = rep.get("placement") or {}
    if p and "native_calls" in p:
        out.append(
            f"placement (whole run): {p['native_calls']:,} native, {p['fallback_calls']:,} "
            "CPU-fallback calls"
            + (
                f" ({p['fallback_share_of_modeled_time']:.1%} of modeled time)"
                if "fallback_share_of_modeled_time" in p
                else ""
            )
        )
        for r in p["fallback_ops"][:5]:
            sites = ", ".join(s["site"] for s in r["sites"][:2])
            out.append(f"  fallback {r['name']} x{r['count']}" + (f" at {sites}" if sites else ""))
    h = rep.get("host_sync") or {}
    if h:
        per = h["in_steady_state_per_step"]
        out.append(
            "host syncs: "
            + ("no step counted" if per is None else f"{per:g} per steady step")
            + f" ({h['total']:,} in the whole run)"
        )
        for r in (h["reads"] + h["data_dependent_shapes"])[:5]:
            out.append(
                f"  {r['name']} x{r['count']} at " + ", ".join(s["site"] for s in r["sites"][:2])
            )
    c = rep.get("compilation") or {}
    if c:
        out.append(
            f"compilation: {c['graphs']} graphs, {len(c['graph_breaks'])} graph breaks, "
            f"{len(c['recompiles'])} recompiles, compile {units.seconds(c['compile_s'])} "
            f"({c.get('graphs_from_cache', 0)} graphs from the warm cache); steady step "
            + (
                "n/a (no step counted)"
                if c["steady_state_step_s"] is None
                else f"{units.seconds(c['steady_state_step_s'])} wall (this host)"
            )
        )
    n = rep.get("numerics") or {}
    if n:
        reason = n.get("verdict_reason") if n.get("verdict") == "not compared" else None
        out.append(
            f"numerics: verdict {n['verdict']}"
            + (f" ({reason})" if reason and (n.get("runs") or n.get("note")) else "")
            + "".join(
                f"; {x['a']} vs {x['b']} {x['quantity']} max rel {x['max_rel_diff']:.2e}"
                for x in n.get("comparisons", [])[:3]
            )
        )
    m = rep.get("memory") or {}
    if m:
        out.append(
            f"memory: peak {units.size(m['peak_allocated'])} allocated, "
            f"{units.size(m['peak_reserved'])} reserved per core"
            + (
                "; fits one core of: "
                + (", ".join(f["profile"] for f in m["fit"] if f["fits_one_core"]) or "none")
                if m.get("peak_allocated")
                else ""
            )
        )
    pr = rep.get("projection") or {}
    if pr and pr.get("withheld"):
        out.append(f"projection {pr['withheld']}")
    elif pr and pr.get("profiles"):
        out.append(
            f"projection per step (modeled, not measured): "
            f"{pr['flops_per_step'] / 1e9:,.3f} GFLOP/step"
        )
        out += _range_lines(pr)
        out += _proj_lines(pr["profiles"])
        out += _recommendation_lines(pr)
    fk = rep.get("fake_projection")
    if fk and fk.get("withheld"):
        out.append(f"fake projection {fk['withheld']}")
    elif fk:
        lay = fk["layout"]
        out.append(
            f"fake projection per step (modeled): {fk['flops_per_step'] / 1e12:,.2f} TFLOP/step, "
            f"{units.size(fk['bytes_per_step'])} HBM traffic, single-core peak "
            f"{units.size(fk['peak_memory_single_core'])}; FSDP {lay['fsdp_degree']} x TP "
            f"{lay['tensor_parallel_degree']}: {units.size(lay['memory_per_core_estimate'])}/core "
            "(estimate)"
        )
        out += _range_lines(fk)
        out += _proj_lines(fk["profiles"])
        out += _recommendation_lines(fk)
    for i in rep.get("readiness") or []:
        out.append(f"[{i['status']}] {i['item']}")
    return [units.rel(line) for line in out]


def _error_lines(rep: dict) -> list:
    """What ended the run, with its file:line: interrupted is not an error."""
    err = rep.get("error")
    if not err:
        return []
    site = err.get("site")
    where = f" at {site}" if site else ""
    if rep.get("status") == "interrupted":
        what = (
            "Ctrl-C (KeyboardInterrupt)"
            if err.get("type") == "KeyboardInterrupt"
            else units.first_lines(err.get("message"), 1)
        )
        return [f"INTERRUPTED: {what}{where}; the report holds what was collected until then"]
    if err.get("type") in ("os._exit", "signal", "SystemExit"):
        return [f"ERROR: {units.first_lines(err.get('message'), 2)}{where}"]
    return [
        f"ERROR: the script raised {err['type']}{where}: {units.first_lines(err.get('message'))}"
    ]


def _range_lines(pr: dict) -> list:
    rg = pr.get("range")
    if not rg:
        return []
    runs = sum(len(v) for v in (rg.get("backing") or {}).values())
    return [
        f"  likely: {rg['label']} ({runs} published run{'s' if runs != 1 else ''}; "
        "report.html lists them)"
    ]


def _recommendation_lines(pr: dict) -> list:
    from .build import recommendation_text

    text = recommendation_text(pr.get("recommendation"))
    rec = pr.get("recommendation") or {}
    if text and rec.get("likely"):
        text += f"; likely {units.usd_range(rec['likely'])} {rec['unit'].removeprefix('USD ')}"
    return [f"  {text}"] if text else []


def _proj_lines(rows) -> list:
    """Two lines per profile: its step (and the compiled step) with their likely ranges, then
    throughput and cost per step's work with theirs."""
    out = []
    for r in rows:
        if r.get("report_error"):
            out.append(f"  {r['profile']:<20} {r['report_error']}")
            continue
        lk = r.get("likely") or {}

        def rng(key, fmt, lk=lk):
            return f" (likely {fmt(lk[key])})" if key in lk else ""

        out.append(
            f"  {r['profile']:<20} step {units.seconds(r['step_s'])}"
            + rng("step_s", units.seconds_range)
            + (
                f", compiled {units.seconds(r['compiled_step_s'])}"
                + rng("compiled_step_s", units.seconds_range)
                if r.get("compiled_step_s")
                else ""
            )
            + f", MFU {r['mfu']:.1%}"
            + ("" if "fits" not in r else f", fits: {units.yes_no(r['fits'])}")
        )
        usd = r.get("usd_per_1000_steps")
        tok = r.get("usd_per_million_tokens")
        out.append(
            f"  {'':<20} "
            + (f"{r['tokens_per_s']:,.0f} tok/s, " if r.get("tokens_per_s") else "")
            + (
                "USD per 1k steps n/a (no price)"
                if usd is None
                else f"{units.usd(usd)} per 1k steps" + rng("usd_per_1000_steps", units.usd_range)
            )
            + (
                ""
                if tok is None
                else f", {units.usd(tok)} per 1M tokens"
                + rng("usd_per_million_tokens", units.usd_range)
            )
        )
    return out


def print_summary(rep: dict, paths: dict | None = None, file=None, console=None) -> None:
    """Prints the summary: with rich, a titled rule and lines that are never wrapped by rich
    (soft wrap: the terminal folds a long line, so a path or a file:line stays one piece to
    copy); without rich, plain lines."""
    lines = summary_lines(rep)
    if paths:
        lines.append("report: " + ", ".join(f"{k} {units.rel(v)}" for k, v in paths.items()))
    con = console if console is not None else (_console() if file is None else None)
    if con is not None:
        from rich.rule import Rule
        from rich.text import Text

        con.print(Rule("torch-neuronx evaluate"))
        for line in lines:
            con.print(Text(line), soft_wrap=True)
        con.print(Rule())
    else:
        print("\n".join(lines), file=file or sys.stdout)
