"""The one report builder of every mode (the instrumented run, the Python API, ``--fake``, and a
run whose worker died without handing data back).

A report is made in two phases:

1. the mode's sections, from what its collectors saw (:func:`measured` from a
   :class:`~.collector.Collector`, :func:`fake` from a fake-tensor trace, :func:`empty` when
   nothing came back);
2. :func:`finish`, from the report dictionary alone (so the harness can run it after the
   worker is gone): blocking items the harness adds (interrupted, the script ended its
   process), projections withheld when the run is not a whole step, the modeled ranges
   (likely.py), the readiness list, the ``--fail-on`` gate and the verdict block. Every mode
   goes through the same :func:`finish`, so they agree on what blocks, what is withheld, what
   fits and what the gate holds.
"""

from __future__ import annotations

import time

from . import build, findings, likely, verdict


# -- phase 1: the sections ----------------------------------------------------------------------
def base(mode: str, argv, *, status: str, error: dict | None, rank=0, world_size=1) -> dict:
    rep = build.header(mode, argv)
    rep.update({"status": status, "error": error, "rank": rank, "world_size": world_size})
    if error and "site" not in error:
        error["site"] = findings.error_site(error.get("traceback", ""))
    return rep


def measured(
    ev, *, runs=None, static=None, rank=0, world_size=1, numerics_note=None, extra=None
) -> dict:
    """The sections of an instrumented run (:class:`~.session.Evaluation`)."""
    c = ev.collector
    if static is None and c.optimizers:
        from .fake import static_bytes

        params = [p for o in c.optimizers for g in o.param_groups for p in g["params"]]
        static = static_bytes(params, c.optimizers)
    rep = base(ev.mode, ev.argv, status=ev.status, error=ev.error, rank=rank, world_size=world_size)
    rep.update(
        {
            "touched_neuron": c.touched_neuron,
            "steps_completed": sum(not s.partial for s in c.steps),
            "steps": [s.to_dict() for s in c.steps],
            "work": ev.work,
            "kind_of_work": _kind(c.tracker.backward_calls or ev.mode.startswith("api")),
        }
    )
    if not c.touched_neuron:
        rep["notice"] = (
            "the workload never touched the neuron device: no op ran on it. Move the model and its "
            "inputs to the device (model.to('neuron'), x.to('neuron')) and run again."
        )
        rep["cuda_checks"] = [site for site, _ in c.cuda_checks.most_common()]
    rep["compile_failures"] = findings.compile_failures(getattr(c, "wall_start", 0.0))
    rep["blocking"] = findings.blocking(rep, c)
    rep["placement"] = build.placement(c)
    rep["host_sync"] = build.host_sync(c, len(c.steps))
    rep["compilation"] = build.compilation(c, None)
    rep["numerics"] = build.numerics(c, runs, ev.tolerances, numerics_note)
    rep["memory"] = build.memory(c, static, ev.profiles)
    parameters = sum(p.numel() for o in c.optimizers for g in o.param_groups for p in g["params"])
    parameters = parameters or sum(p.numel() for p in c.tracker.manual_params)  # by-hand updates
    rep["projection"] = build.projection(
        c, ev.profiles, ev.work, findings.withheld(rep), parameters or None
    )
    if extra:
        rep.update(extra)
    return rep


def fake(argv, outcome, rec, tracker, profiles, work, *, dp, tp, t0=None) -> dict:
    """The sections of a ``--fake`` trace: ``rec`` the FakeStepRecorder, ``tracker`` its step
    tracker, ``outcome`` the runner's."""
    import resource

    from . import fake as _fake
    from . import sanity

    rep = base("fake", argv, status=outcome.status, error=outcome.error)
    optimizers = tracker.optimizers if tracker is not None else []
    params = [p for o in optimizers for g in o.param_groups for p in g["params"]]
    static = _fake.static_bytes(params, optimizers)
    inferred = _fake.inferred_work(rec)
    if inferred:  # as the API infers them; the command line's figures win
        work = {
            **{k: inferred[k] for k in ("samples_per_step", "tokens_per_step") if k in inferred},
            **work,
        }
    rep["work"] = work
    rep["kind_of_work"] = _kind(tracker is not None and tracker.backward_calls)
    fk = _fake.project(rec, profiles, dp=dp, tp=tp, static=static, work=work)
    fk["flops_check"] = sanity.six_nd(
        fk.get("flops_per_step") or 0, static.get("parameter_count"), work.get("tokens_per_step")
    )
    fk["trace_wall_s"] = time.perf_counter() - t0 if t0 else 0.0
    fk["host_max_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    rep["fake_projection"] = fk
    rep["touched_neuron"] = rec.ops > 0
    rep["steps_completed"] = 1 if rec.stop_at_next_step else 0
    if not rec.ops:
        rep["notice"] = "the script never ran an op on the neuron device (under fake tensors)"
    fallbacks = sum(rec.fallbacks.values())
    rep["placement"] = {  # the fake trace's ops: no call sites (fake.py counts names)
        "native_calls": rec.ops - fallbacks,
        "fallback_calls": fallbacks,
        "total_calls": rec.ops,
        "fallback_ops": [
            {"name": n, "count": k, "sites": []} for n, k in rec.fallbacks.most_common()
        ],
    }
    rep["blocking"] = findings.blocking(rep, None) if rep["status"] != "ok" else []
    if rep["status"] == "error" and not rep["blocking"]:  # SystemExit: no traceback to point at
        rep["blocking"] = [
            {"status": "fail", "item": "The fake trace ended with an error", "site": None}
        ]
    return rep


def empty(mode: str, argv, profiles, *, error: dict, rank=0, world_size=1) -> dict:
    """A report with no measurements: the worker ended (a signal) before handing data back."""
    from .collector import Collector

    rep = base(mode, argv, status="error", error=error, rank=rank, world_size=world_size)
    rep.update(touched_neuron=False, steps_completed=0, steps=[], work={}, blocking=[])
    if mode == "fake":
        rep["fake_projection"] = {"withheld": "", "profiles": [], "data_dependence": []}
        return rep
    c = Collector(profiles)  # never started: the sections of a run that collected nothing
    rep["placement"] = build.placement(c)
    rep["host_sync"] = build.host_sync(c, 0)
    rep["memory"] = build.memory(c, None, profiles)
    rep["projection"] = {"projection": True, "profiles": [], "withheld": ""}
    return rep


def _kind(trained) -> str:
    """The kind of work whose validation errors give the ranges (perf/ranges.py): a run that
    called backward() is training; one that did not, single kernels (as perf.measure does)."""
    return "training" if trained else "kernel"


# -- phase 2: every mode ---------------------------------------------------------------------------
def finish(rep: dict, fail_on=(), blocking=()) -> dict:
    """Completes ``rep`` in place (see the module doc); ``blocking``: items the harness adds
    (each a message: the run was interrupted, the script ended its own process)."""
    rep.setdefault("blocking", [])
    for message in reversed(list(blocking)):
        rep["blocking"].insert(0, {"status": "fail", "item": message})
    reason = findings.withheld(rep) if rep.get("mode") != "fake" else _fake_withheld(rep)
    for key in ("projection", "fake_projection"):
        if rep.get(key) is not None and reason:
            withhold(rep, key, reason)
    for key in ("projection", "fake_projection"):
        if rep.get(key) and not rep[key].get("withheld"):
            likely.add(rep[key], rep.get("kind_of_work", "training"))
    rep["readiness"] = readiness(rep)
    rep["fail_on"] = {"requested": list(fail_on), "triggered": gate(rep, fail_on)}
    rep["verdict"] = verdict.build(rep)  # last: it reads the readiness and the sections
    return rep


def _fake_withheld(rep: dict) -> str | None:
    """A fake trace's figures stand unless the trace did not complete (a script without an
    optimizer step is traced to its end: that is its workload)."""
    if rep.get("status") != "ok":
        return f"withheld: the fake trace did not complete (status {rep.get('status')})"
    if rep.get("blocking"):
        return "withheld: " + rep["blocking"][0]["item"]
    return None


#: what a withheld projection keeps: what it says about the run, no figure of a step
_KEPT = (
    "projection",
    "by_op",
    "fake",
    "emulated_profile",
    "scaled_nki_costs",
    "assumptions",
    "data_dependence",
    "cuda_calls",
    "fallback_ops",
    "trace_wall_s",
    "host_max_rss_bytes",
)


def withhold(rep: dict, key: str, reason: str) -> None:
    """Replaces a projection's figures with the reason they are withheld."""
    pr = rep.get(key) or {}
    if pr.get("withheld"):
        return
    out = {k: pr[k] for k in _KEPT if k in pr}
    out.update(withheld=reason, profiles=[])
    if key == "projection":
        out.update(modeled_step_s_emulated=None, flops_per_step=None)
    else:
        out.setdefault("data_dependence", [])
    rep[key] = out


def readiness(rep: dict) -> list:
    """build.readiness (every mode's sections) plus the items of a fake trace."""
    items = build.readiness(rep)
    fk = rep.get("fake_projection") or {}
    for d in fk.get("data_dependence") or []:
        items.append(
            {
                "status": "warn",
                "item": f"the step reads device values on the host (data dependence) at "
                f"{d['site']}: {d['line']}",
            }
        )
        break  # the first site; the section lists them all
    for c in fk.get("cuda_calls") or []:
        items.append(
            {
                "status": "warn",
                "item": f"CUDA call {c['call']} x{c['count']} at {c['site']} ran on neuron under "
                f"--fake: use {c['fix']}",
            }
        )
    order = {"fail": 0, "warn": 1, "pass": 2}
    return sorted(items, key=lambda i: order[i["status"]])


def gate(rep: dict, fail_on) -> list:
    """The ``--fail-on`` conditions that hold (each a short reason), the same in every mode."""
    out = []
    pl = rep.get("placement") or {}
    if "fallback" in fail_on and pl.get("fallback_calls"):
        out.append(f"fallback: {pl['fallback_calls']} CPU-fallback calls")
    recompiles = (rep.get("compilation") or {}).get("recompiles")
    if "recompile" in fail_on and recompiles:
        out.append(f"recompile: {len(recompiles)} recompilations")
    if "numerics" in fail_on and (rep.get("numerics") or {}).get("verdict") == "fail":
        out.append("numerics: verdict fail")
    if "memory" in fail_on:
        yes, judged = verdict.fits(rep)
        if judged and not yes:
            out.append(f"memory: does not fit one core of any profile ({', '.join(judged)})")
    return out


def jsonable(x):
    """``json.dump``'s ``default`` for a report: sets and tuples as lists, anything else as its
    string (a report must always be written)."""
    if isinstance(x, (set, frozenset, tuple)):
        return list(x)
    return str(x)
