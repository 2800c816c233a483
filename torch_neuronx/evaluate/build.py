"""Turns what the collectors saw into the report dictionary (the JSON schema, docs/evaluate.md).

Every figure that is not measured on this machine is marked: ``modeled`` (the performance
model's Trainium time), ``projection`` (time and cost on an instance profile) or ``estimate``
(sharding). The emulator's own wall times are reported as such and never as Trainium time."""

from __future__ import annotations

import datetime
import math
import platform
import statistics

import torch

from torch_neuronx._version import __version__
from torch_neuronx.perf import events as ev
from torch_neuronx.perf import target as perf_target
from torch_neuronx.runtime import hardware
from torch_neuronx.runtime.op_names import strip_overload

from . import advice

SCHEMA = "torch-neuronx-evaluate"
SCHEMA_VERSION = 2  # 2: placement.unsupported_features rows are objects (was strings)
SECTIONS = (
    "placement",
    "host_sync",
    "compilation",
    "numerics",
    "memory",
    "projection",
    "readiness",
)
FAIL_ON = ("fallback", "recompile", "numerics", "memory")


def _median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else 0.0


def steady_steps(steps: list) -> list:
    """Whole steps after the first (the first pays compilation and allocator warm-up); none
    when no whole step was counted (the work of an unfinished step is not a step)."""
    whole = [s for s in steps if not s.partial]
    return whole[1:] if len(whole) > 1 else whole


def placement(c) -> dict:
    native = sum(c.placement_native.values())
    fb = sum(c.fallback.count.values())
    total = native + fb
    modeled_total = sum(row[1] for row in c.op_time.values())
    fb_time = sum(c.fallback_time_s.values())
    rows = c.fallback.rows()
    for r in rows:
        r["modeled_s"] = c.fallback_time_s.get(
            strip_overload(r["name"]), 0.0
        ) + c.fallback_time_s.get(r["name"], 0.0)
    return {
        "native_calls": native,
        "fallback_calls": fb,
        "total_calls": total,
        "fallback_share_of_calls": fb / total if total else 0.0,
        "fallback_share_of_modeled_time": fb_time / modeled_total if modeled_total else 0.0,
        "fallback_ops": rows,
        "strict_mode": (
            "TORCH_NEURONX_STRICT=1 would stop the run at the first CPU fallback: "
            f"{rows[0]['name']} at {rows[0]['sites'][0]['site'] if rows[0]['sites'] else '?'}"
            if rows
            else "TORCH_NEURONX_STRICT=1 would pass: no CPU fallback"
        ),
        "top_native_ops": [{"name": k, "count": v} for k, v in c.placement_native.most_common(15)],
        "unsupported_features": [
            {**r, "advice": c.unsupported_advice.get(r["name"], "")} for r in c.unsupported.rows()
        ],
    }


def host_sync(c, nsteps: int) -> dict:
    reads = c.host_reads.rows()
    dd = c.data_dependent.rows()
    per_step = [s.host_syncs for s in c.steps if not s.partial]
    return {
        "total": sum(r["count"] for r in reads) + sum(r["count"] for r in dd),
        "driver_counter": getattr(c, "host_read_counter", None),
        "per_step": per_step,
        "in_steady_state_per_step": _median(per_step[1:])
        if len(per_step) > 1
        else (per_step[0] if per_step else None),  # None: no step was counted
        "reads": reads,
        "data_dependent_shapes": dd,
        # paid once per compilation, in no step (collector.compile_time_reads)
        "compile_time": c.compile_time_reads.rows(),
        "note": "each read stalls an asynchronous device until the queued work is done; move reads out of "
        "the step loop or batch them (e.g. log every N steps)",
    }


def compilation(c, extra: dict | None) -> dict:
    from torch_neuronx.compile import dynamo_metrics

    graphs = [
        g
        for g in dynamo_metrics.get_dynamo_metrics()
        if g.get("timestamp", 0) >= getattr(c, "wall_start", 0)
    ]
    wall = [s.wall_s for s in c.steps if not s.partial]  # no whole step: no step time
    for r in c.recompiles:  # the failed guard, what it says changed, the fix (advice.py)
        r.update(advice.recompile_advice(r["reasons"]))
    return {
        "graphs": len(graphs),
        "graph_records": [
            {
                k: g.get(k)
                for k in (
                    "name",
                    "function",
                    "graph_index",
                    "node_count",
                    "input_shapes",
                    "cache",
                    "total_s",
                )
            }
            for g in graphs
        ][:50],
        "graph_breaks": c.graph_breaks,
        "recompiles": c.recompiles,
        "compile_s": sum(g.get("total_s") or 0.0 for g in graphs),
        # the backend's persistent cache says which graphs compiled cold and which loaded
        "compile_cold_s": sum(g.get("total_s") or 0.0 for g in graphs if g.get("cache") != "hit"),
        "compile_warm_cache_s": sum(
            g.get("total_s") or 0.0 for g in graphs if g.get("cache") == "hit"
        ),
        "graphs_from_cache": sum(g.get("cache") == "hit" for g in graphs),
        "warm_cache_note": (
            "every graph compiled cold: run again to measure the warm-cache time (the persistent "
            "compile cache, TORCH_NEURONX_NEFF_CACHE_DIR, now holds these graphs)"
            if graphs and not any(g.get("cache") == "hit" for g in graphs)
            else ""
        ),
        "cold_step_s": wall[0] if wall else None,
        "warm_step_s": wall[1] if len(wall) > 1 else None,
        "steady_state_step_s": _median(wall[2:] or wall[1:] or wall) if wall else None,
        "wall_times_note": "wall times of this host (the emulator), not Trainium times",
        **(extra or {}),
    }


def numerics(c, runs: dict | None, tolerances: dict, note: str | None = None) -> dict:
    out = {
        "policy_deviations": {
            "float64_in_float32": {
                "count": sum(c.float64.count.values()),
                "ops": c.float64.rows(),
                "policy": "TorchNeuron runs float64 arithmetic in float32",
            },
            "autocast": {
                "count": sum(c.autocast.count.values()),
                "ops": c.autocast.rows(),
                "policy": "ops of a torch.autocast('neuron') region that produced the autocast "
                "dtype (lower precision than the reference's)",
            },
        },
        "tolerances": tolerances,
        "loss": [s.loss for s in c.steps],
        "comparisons": [],
        "verdict": "not compared",
    }
    if note:
        out["note"] = note
    if not runs or len(runs) < 2:
        out["verdict_reason"] = note or (
            "no reference run: pass --reference cpu (the script is re-run with the neuron "
            "device mapped to the CPU) or use the Python API (evaluate_model)"
        )
        return out
    ok = True
    ref = runs.get("reference")
    pairs = [
        ("neuron_eager", "reference"),
        ("neuron_compiled", "reference"),
        ("neuron_compiled", "neuron_eager"),
    ]
    skipped = []
    for a, b in pairs:
        if a not in runs or b not in runs:
            continue
        differ = _inputs_differ(runs[a], runs[b], tolerances)
        if differ:  # a re-run that saw other inputs: comparing it would report a false failure
            skipped.append({"a": a, "b": b, "reason": differ})
            continue
        for quantity in ("loss", "grad_norm", "output"):
            xa, xb = runs[a].get(quantity) or [], runs[b].get(quantity) or []
            if not xa or not xb:
                continue
            diffs = []
            for va, vb in zip(xa, xb):
                if va is None or vb is None:
                    continue
                diffs.append(abs(va - vb) / max(abs(vb), 1e-12))
            if not diffs:  # e.g. no optimizer: no gradient norm was read
                continue
            worst = max(diffs, default=0.0)
            tol = tolerances.get(quantity, tolerances.get("loss"))
            passed = worst <= tol and all(math.isfinite(v) for v in xa if v is not None)
            ok &= passed
            out["comparisons"].append(
                {
                    "a": a,
                    "b": b,
                    "quantity": quantity,
                    "rel_diff_per_step": diffs,
                    "max_rel_diff": worst,
                    "rtol": tol,
                    "pass": passed,
                }
            )
    out["runs"] = runs
    out["reference_device"] = (ref or {}).get("device")
    out["not_compared"] = skipped
    ref_skipped = next((x for x in skipped if x["b"] == "reference"), None)
    if not ok:
        out["verdict"] = "fail"
    elif ref_skipped or not out["comparisons"]:
        out["verdict"] = "not compared"
        out["verdict_reason"] = (ref_skipped or (skipped or [{}])[0]).get("reason") or (
            "no comparable per-step values (no loss or gradient norm recorded)"
        )
    else:
        out["verdict"] = "pass"
    return out


def _inputs_differ(ra: dict, rb: dict, tolerances: dict) -> str | None:
    """Why two runs cannot be compared: their first losses differ. Before the first update
    the loss depends only on the initial weights and the inputs, so a first loss that differs
    beyond the loss tolerance means the re-run did not reproduce them (an unseeded data
    loader, timm's random inputs), not that the device computes differently. Checked before
    anything else is compared."""
    la, lb = (ra.get("loss") or [None])[0], (rb.get("loss") or [None])[0]
    if la is None or lb is None or not (math.isfinite(la) and math.isfinite(lb)):
        return None
    tol = tolerances.get("loss", 1e-4)
    if abs(la - lb) <= tol * max(abs(lb), 1e-12):
        return None
    return (
        f"not compared: the reference run's inputs differ (first loss {la:.6g} vs {lb:.6g}, "
        "before any update): seed the data and the model so that a re-run sees the same inputs"
    )


def memory(c, static: dict | None, profiles: list) -> dict:
    peak_alloc: dict = {}
    peak_res: dict = {}
    for s in c.steps:
        for d, v in s.mem_peak_allocated.items():
            peak_alloc[d] = max(peak_alloc.get(d, 0), v)
        for d, v in s.mem_peak_reserved.items():
            peak_res[d] = max(peak_res.get(d, 0), v)
    peak = max(peak_alloc.values(), default=0)
    return memory_fit(
        peak,
        max(peak_res.values(), default=0),
        static,
        profiles,
        per_device={
            "peak_allocated": {str(k): v for k, v in peak_alloc.items()},
            "peak_reserved": {str(k): v for k, v in peak_res.items()},
        },
        timeline=[
            {"t_s": t, "device": d, "allocated": a, "reserved": r}
            for t, d, a, r in c.memory_timeline
        ],
    )


def memory_fit(
    peak: float, peak_reserved: float, static: dict | None, profiles: list, **extra
) -> dict:
    static = static or {}
    pgo = sum(static.get(k, 0) for k in ("parameters", "gradients", "optimizer_state"))
    activations = max(peak - pgo, 0) if static else None
    fits = []
    for p in profiles:
        cap = p.hbm_per_core
        row = {
            "profile": p.key,
            "instance": p.instance_name,
            "lnc": p.lnc,
            "hbm_per_core": cap,
            "fits_one_core": peak <= cap,
            "headroom": cap - peak,
        }
        if peak > cap and static and activations is not None and activations < cap:
            degree = math.ceil(pgo / (cap - activations))
            row["fsdp_degree_estimate"] = degree
            row["instances_needed"] = math.ceil(degree / p.cores)
            row["fsdp_note"] = (
                f"estimate: FSDP over {degree} cores holds {pgo / degree / 2**30:.2f} GiB of "
                f"parameters+gradients+optimizer state per core plus {activations / 2**30:.2f} GiB "
                "of activations per micro-batch"
                + ("" if degree <= p.cores else f"; more than the {p.cores} cores of one instance")
            )
        elif peak > cap:
            row["fsdp_note"] = (
                "activations alone exceed one core: reduce the micro-batch, use activation "
                "checkpointing, or tensor/sequence parallelism"
            )
        row["data_parallel"] = (
            "fits: each data-parallel replica needs the same memory as this run"
            if peak <= cap
            else "does not fit: data parallelism replicates the whole model"
        )
        fits.append(row)
    return {
        "peak_allocated": peak,
        "peak_reserved": peak_reserved,
        "static": static,
        "activations_estimate": activations,
        "fit": fits,
        **extra,
    }


def projection(
    c, profiles: list, work: dict | None, withheld: str | None = None, parameters=None
) -> dict:
    """Modeled step time per profile, MFU, throughput and cost (a projection); ``withheld``:
    why there is none (the run did not complete, or counted no step: findings.withheld)."""
    from . import sanity

    emulated = perf_target.current()
    breakdown = sorted(
        ([name, row[0], row[1], row[2], kind] for (kind, name), row in c.op_time.items()),
        key=lambda r: -r[2],
    )[:25]
    out = {
        "projection": True,
        "emulated_profile": f"{emulated.instance.name}/lnc{emulated.lnc}",
        "scaled_nki_costs": getattr(c, "scaled_costs", 0),
        "by_op": [  # totals over the whole run (not per step)
            {"name": n, "count": k, "modeled_s": t, "flops": f, "kind": kind}
            for n, k, t, f, kind in breakdown
        ],
        "assumptions": ASSUMPTIONS,
    }
    steps = steady_steps(c.steps)
    if withheld or not steps:
        out.update(
            withheld=withheld or "withheld: no step was counted",
            modeled_step_s_emulated=None,
            flops_per_step=None,
            profiles=[],
        )
        return out
    flops = _median([s.flops for s in steps])
    rows = []
    for p in profiles:
        t = _median([s.projected.get(p.key, 0.0) for s in steps])
        tc = _median([s.projected_compiled.get(p.key, 0.0) for s in steps])
        rows.append(
            sanity.check_row(projection_row(p, t, flops, work, compiled_s=tc), flops, p.target.core)
        )
    out.update(
        modeled_step_s_emulated=_median([max(s.device_s.values(), default=0.0) for s in steps]),
        flops_per_step=flops,
        flops_check=sanity.six_nd(flops, parameters, (work or {}).get("tokens_per_step")),
        profiles=rows,
        recommendation=recommendation(rows, work),
        report_errors=[r["report_error"] for r in rows if r.get("report_error")],
    )
    # what bounds the step and its lever (advice.py), from the emulated profile's costs
    row = next((r for r in rows if r["profile"] == out["emulated_profile"]), None)
    out["advice"] = advice.from_steps(steps, row, emulated.core, out["emulated_profile"])
    return out


ASSUMPTIONS = [
    "Modeled by torch_neuronx.perf (docs/perf-model.md): a roofline per op/kernel from public hardware "
    "figures; no Trainium was used.",
    "Step time = the steady-state steps' median (the first step is left out: it pays compilation).",
    "Every recorded piece of work (eager op, compiled kernel, collective, copy, CPU fallback) is re-costed "
    "with each profile's own hardware figures from what it recorded (torch_neuronx.perf.recost); a CPU "
    "fallback keeps its measured host kernel time. Only NKI kernels (simulated instruction by instruction on "
    "the emulated generation) are scaled by the ratio of peak FLOP/s and HBM bandwidth "
    "('scaled_nki_costs' counts them).",
    "'compiled_step_s' models the same ops as kernels of one compiled graph (no per-op launch).",
    "Cost = instance price x time x the share of the instance's cores the layout uses ('billed_cores'; "
    "the other cores run other work); per-token and per-sample cost divide that by the layout's "
    "tokens or samples per step.",
    "Prices: the hardware table's best public figure unless passed in (--price INSTANCE=USD).",
]


def projection_row(
    p,
    step_s: float,
    flops: float,
    work: dict | None,
    compiled_s: float | None = None,
    ranks: int = 1,
    cores_per_replica: int = 1,
) -> dict:
    """One profile's projection. ``flops``: per core per step; ``ranks``: data-parallel replicas,
    each running ``work`` per step on ``cores_per_replica`` cores (tensor parallelism)."""
    work = work or {}
    peak = p.target.core.tensor_peak("bf16")
    instances = max(1, math.ceil(ranks * cores_per_replica / p.cores))
    row = {
        "profile": p.key,
        "instance": p.instance_name,
        "lnc": p.lnc,
        "cores_per_instance": p.cores,
        "step_s": step_s,
        "compiled_step_s": compiled_s,
        "mfu": flops / (step_s * peak) if step_s else 0.0,
        "peak_bf16_flops_per_core": peak,
        "instances": instances,
        "price_usd_per_hour": p.price_usd_per_hour,
        "price_source": p.price_source,
    }
    samples, tokens = work.get("samples_per_step"), work.get("tokens_per_step")
    if step_s:
        if samples:
            row["samples_per_s"] = samples * ranks / step_s
        if tokens:
            row["tokens_per_s"] = tokens * ranks / step_s
    price = p.price_usd_per_hour
    # billed: the cores the layout uses (the rest of the instance runs other work or other
    # replicas), never a whole instance for one rank
    cores_used = ranks * cores_per_replica
    row["billed_cores"] = cores_used
    row["price_verified"] = p.price_verified
    if price is not None and step_s:
        usd_per_step = step_s * price / 3600.0 * cores_used / p.cores
        row["usd_per_1000_steps"] = 1000 * usd_per_step
        if tokens:
            row["usd_per_million_tokens"] = usd_per_step / (tokens * ranks) * 1e6
        if samples:
            row["usd_per_1000_samples"] = usd_per_step / (samples * ranks) * 1e3
    else:
        row["usd_per_1000_steps"] = None
        if price is None:
            row["price_note"] = (
                "no price for this instance: pass --price " + p.instance_name + "=USD_PER_HOUR"
            )
    return row


def recommendation(rows: list, work: dict | None) -> dict | None:
    """The cheapest profile for the layout: per 1M tokens when tokens per step are known, else
    per 1,000 samples, else per 1,000 steps; among rows with a price (and that fit, when the
    rows say). Modeled; the price's source is shown and an unverified price is marked."""
    work = work or {}
    for key, _unit in (
        ("usd_per_million_tokens", "USD per 1M tokens"),
        ("usd_per_1000_samples", "USD per 1,000 samples"),
        ("usd_per_1000_steps", "USD per 1,000 steps"),
    ):
        cands = [r for r in rows if r.get(key) is not None and r.get("fits", True)]
        if cands:
            unit = _unit
            break
    else:
        unpriced = sorted({r["instance"] for r in rows if r.get("price_usd_per_hour") is None})
        return {
            "profile": None,
            "reason": "no profile has a price and fits"
            + (
                f" (no price: {', '.join(unpriced)}; pass --price INSTANCE=USD)" if unpriced else ""
            ),
        }
    best = min(cands, key=lambda r: r[key])
    out = {
        "profile": best["profile"],
        "instance": best["instance"],
        "lnc": best["lnc"],
        "metric": key,
        "unit": unit,
        "value": best[key],
        "modeled": True,
        "price_usd_per_hour": best["price_usd_per_hour"],
        "price_source": best["price_source"],
        "price_verified": best.get("price_verified", False),
        "billed_cores": best.get("billed_cores"),
        "compared": [r["profile"] for r in cands],
        "left_out": sorted(
            {r["profile"] for r in rows if r not in cands},
        ),
    }
    if key != "usd_per_million_tokens" and not work.get("tokens_per_step"):
        out["note"] = "tokens per step unknown: pass --tokens-per-step for USD per 1M tokens"
    return out


def recommendation_text(rec: dict | None) -> str:
    if not rec:
        return ""
    if not rec.get("profile"):
        return f"cheapest: n/a ({rec['reason']})"
    price = f"${rec['price_usd_per_hour']:.3f}/h" + (
        " UNVERIFIED price" if not rec["price_verified"] else ""
    )
    return (
        f"cheapest (modeled): {rec['profile']} at {rec['value']:.4g} {rec['unit']} "
        f"({rec['billed_cores']} core(s) billed; {price}, source: {rec['price_source']})"
    )


def readiness(rep: dict) -> list:
    items = [dict(i) for i in rep.get("blocking") or []]
    pl, hs, co, nu, me = (
        rep.get(k) or {} for k in ("placement", "host_sync", "compilation", "numerics", "memory")
    )
    if not rep.get("touched_neuron", True):
        checks = rep.get("cuda_checks") or []
        item = {
            "status": "fail",
            "item": "The workload never used the neuron device: move the model and "
            "inputs with .to('neuron').",
        }
        if checks:  # the script chose its device where CUDA was found missing
            item = {
                "status": "fail",
                "item": f"The workload never used the neuron device: torch.cuda.is_available() "
                f"returned False at {checks[0]} (there is no CUDA on Trainium), and the script "
                "chose another device there: choose 'neuron' at that line "
                "(torch.neuron.is_available()) or pass the device the script takes",
                "site": checks[0],
            }
        items.append(item)
    if pl.get("fallback_calls"):
        top = pl["fallback_ops"][0]
        site = f" at {top['sites'][0]['site']}" if top["sites"] else ""
        items.append(
            {
                "status": "fail",
                "item": f"{pl['fallback_calls']} CPU-fallback calls ({len(pl['fallback_ops'])} "
                f"ops); first fix {top['name']}{site}",
            }
        )
    elif pl.get("total_calls"):  # no op at all is no evidence that ops run natively
        items.append({"status": "pass", "item": "Every op ran natively on the device"})
    for r in pl.get("unsupported_features") or []:
        site = r["sites"][0]["site"] if r["sites"] else "?"
        items.append(
            {
                "status": "warn",
                "item": f"{r['name']} is not supported by TorchNeuron (at {site}): {r['advice']}",
            }
        )
    if hs.get("in_steady_state_per_step"):
        first = (hs.get("reads") or hs.get("data_dependent_shapes") or [{}])[0]
        site = (first.get("sites") or [{}])[0].get("site", "?")
        items.append(
            {
                "status": "warn",
                "item": f"{hs['in_steady_state_per_step']:g} host syncs per step "
                f"(e.g. {first.get('name', '?')} at {site}): move them out of the loop",
            }
        )
    elif hs.get("in_steady_state_per_step") == 0:  # None: no step was counted to look into
        items.append({"status": "pass", "item": "No host sync inside the steady-state step"})
    if co.get("graph_breaks"):
        g = co["graph_breaks"][0]
        items.append(
            {
                "status": "warn",
                "item": f"{len(co['graph_breaks'])} graph breaks; first at {g['site']}: "
                f"{g['reason'][:120]}",
            }
        )
    if co.get("recompiles"):
        r = co["recompiles"][0]
        items.append(
            {
                "status": "warn",
                "item": f"{len(co['recompiles'])} recompilations (at {r['site']}): "
                f"{r.get('explanation', '')}; {r.get('suggestion', '')}",
            }
        )
    v = nu.get("verdict")
    if v == "fail":
        items.append(
            {
                "status": "fail",
                "item": "Numerics differ from the reference beyond the tolerances",
                "topic": "numerics",
            }
        )
    elif v == "pass":
        items.append(
            {"status": "pass", "item": "Numerics match the reference within the tolerances"}
        )
    elif nu.get("not_compared"):
        items.append({"status": "warn", "item": "Numerics " + nu["verdict_reason"]})
    dev = (nu.get("policy_deviations") or {}).get("float64_in_float32", {})
    if dev.get("count"):
        items.append(
            {
                "status": "warn",
                "item": f"{dev['count']} float64 op calls run in float32 by policy: "
                "use float32 explicitly where precision allows",
            }
        )
    fit = me.get("fit") or []
    if fit and not any(f["fits_one_core"] for f in fit):
        items.append(
            {
                "status": "fail",
                "item": "Does not fit one core of any profile: see the sharding estimate",
                "topic": "memory",
            }
        )
    elif fit:
        items.append(
            {
                "status": "pass",
                "item": "Fits one core of: "
                + ", ".join(f["profile"] for f in fit if f["fits_one_core"]),
            }
        )
    order = {"fail": 0, "warn": 1, "pass": 2}
    return sorted(items, key=lambda i: order[i["status"]])


def header(mode: str, argv: list | None = None) -> dict:
    emu = perf_target.current()
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "tool": f"torch-neuronx {__version__}",
        "torch": torch.__version__,
        "python": platform.python_version(),
        "mode": mode,
        "argv": argv or [],
        "emulated": {
            "instance": emu.instance.name,
            "lnc": emu.lnc,
            "generation": emu.core.generation,
            "hbm_per_core": emu.core.hbm_capacity,
        },
        "instances_known": list(hardware.INSTANCES),
    }


KINDS = (ev.OP, ev.KERNEL, ev.GRAPH, ev.COLLECTIVE, ev.COPY, ev.FALLBACK)
