"""The terminal summary (rich when installed, plain text otherwise) and the progress bar."""

from __future__ import annotations

import sys


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
    out = []
    st = rep.get("status")
    out.append(
        f"torch-neuronx evaluate: {rep.get('mode')} | status {st} | {rep.get('steps_completed', 0)} steps | "
        f"emulated {rep['emulated']['instance']} LNC={rep['emulated']['lnc']} | rank "
        f"{rep.get('rank', 0)}/{rep.get('world_size', 1)}"
    )
    if rep.get("verdict"):
        from .verdict import lines

        out += lines(rep["verdict"])
    if rep.get("notice"):
        out.append("NOTE: " + rep["notice"])
    if rep.get("error"):
        out.append(f"ERROR: the script raised {rep['error']['type']}: {rep['error']['message']}")
    p = rep.get("placement") or {}
    if p:
        out.append(
            f"placement: {p['native_calls']} native, {p['fallback_calls']} CPU-fallback calls "
            f"({p['fallback_share_of_modeled_time']:.1%} of modeled time)"
        )
        for r in p["fallback_ops"][:5]:
            out.append(
                f"  fallback {r['name']} x{r['count']} at "
                + ", ".join(s["site"] for s in r["sites"][:2])
            )
    h = rep.get("host_sync") or {}
    if h:
        per = h["in_steady_state_per_step"]
        out.append(
            f"host syncs: {h['total']} ("
            + ("no step counted" if per is None else f"{per:g} per steady step")
            + ")"
        )
        for r in (h["reads"] + h["data_dependent_shapes"])[:5]:
            out.append(
                f"  {r['name']} x{r['count']} at " + ", ".join(s["site"] for s in r["sites"][:2])
            )
    c = rep.get("compilation") or {}
    if c:
        out.append(
            f"compilation: {c['graphs']} graphs, {len(c['graph_breaks'])} graph breaks, "
            f"{len(c['recompiles'])} recompiles, compile {c['compile_s']:.2f} s "
            f"({c.get('graphs_from_cache', 0)} graphs from the warm cache); steady step "
            + (
                "n/a (no step counted)"
                if c["steady_state_step_s"] is None
                else f"{c['steady_state_step_s'] * 1e3:.1f} ms wall (this host)"
            )
        )
    n = rep.get("numerics") or {}
    if n:
        out.append(
            f"numerics: verdict {n['verdict']}"
            + "".join(
                f"; {x['a']} vs {x['b']} {x['quantity']} max rel {x['max_rel_diff']:.2e}"
                for x in n.get("comparisons", [])[:3]
            )
        )
    m = rep.get("memory") or {}
    if m:
        out.append(
            f"memory: peak {m['peak_allocated'] / 2**20:,.1f} MiB allocated, "
            f"{m['peak_reserved'] / 2**20:,.1f} MiB reserved per core; fits: "
            + ", ".join(f"{f['profile']}={'yes' if f['fits_one_core'] else 'no'}" for f in m["fit"])
        )
    pr = rep.get("projection") or {}
    if pr and pr.get("withheld"):
        out.append(f"projection {pr['withheld']}")
    elif pr:
        out.append(
            f"projection (modeled, not measured): {pr['flops_per_step'] / 1e9:,.3f} GFLOP/step"
        )
        out += _proj_lines(pr["profiles"])
        out += _recommendation_lines(pr)
    fk = rep.get("fake_projection")
    if fk and fk.get("withheld"):
        out.append(f"fake projection {fk['withheld']}")
    elif fk:
        lay = fk["layout"]
        out.append(
            f"fake projection: {fk['flops_per_step'] / 1e12:,.2f} TFLOP/step, "
            f"{fk['bytes_per_step'] / 2**30:,.1f} GiB HBM traffic, single-core peak "
            f"{fk['peak_memory_single_core'] / 2**30:,.1f} GiB; FSDP {lay['fsdp_degree']} x TP "
            f"{lay['tensor_parallel_degree']}: {lay['memory_per_core_estimate'] / 2**30:,.2f} GiB/core"
        )
        out += _proj_lines(fk["profiles"])
        out += _recommendation_lines(fk)
    for i in rep.get("readiness") or []:
        out.append(f"[{i['status']}] {i['item']}")
    return out


def _recommendation_lines(pr: dict) -> list:
    from .build import recommendation_text

    text = recommendation_text(pr.get("recommendation"))
    return [f"  {text}"] if text else []


def _proj_lines(rows) -> list:
    out = []
    for r in rows:
        if r.get("report_error"):
            out.append(f"  {r['profile']:<20} {r['report_error']}")
            continue
        usd = r.get("usd_per_1000_steps")
        tok = r.get("usd_per_million_tokens")
        out.append(
            f"  {r['profile']:<20} step {r['step_s'] * 1e3:10.3f} ms (compiled "
            f"{(r.get('compiled_step_s') or 0) * 1e3:.3f} ms)  MFU {r['mfu']:6.1%}  "
            + (f"{r['tokens_per_s']:,.0f} tok/s  " if r.get("tokens_per_s") else "")
            + ("USD/1k steps n/a (no price)" if usd is None else f"USD/1k steps {usd:,.4f}")
            + ("" if tok is None else f"  USD/1M tok {tok:,.4f}")
            + ("" if "fits" not in r else f"  fits {r['fits']}")
        )
    return out


def print_summary(rep: dict, paths: dict | None = None, file=None) -> None:
    lines = summary_lines(rep)
    if paths:
        lines.append("report: " + ", ".join(f"{k} {v}" for k, v in paths.items()))
    con = _console() if file is None else None
    if con is not None:
        from rich.panel import Panel
        from rich.text import Text

        con.print(Panel(Text("\n".join(lines)), title="torch-neuronx evaluate"))
    else:
        print("\n".join(lines), file=file or sys.stdout)
