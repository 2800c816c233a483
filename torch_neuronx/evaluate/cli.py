"""``torch-neuronx evaluate script.py [script args]``: the migration report of a script.

    torch-neuronx evaluate train.py --epochs 1            # instrumented run, report in ./neuron-eval/
    torch-neuronx evaluate --steps 20 --fail-on fallback,recompile train.py
    torch-neuronx evaluate --reference cpu --fail-on numerics train.py   # + numerics vs the CPU
    torch-neuronx evaluate --fake --fsdp 8 --tp 4 train_llama.py   # full-size projection, fake tensors
    torchrun --nproc-per-node 2 -m torch_neuronx.tools.cli evaluate train_ddp.py   # per-rank + merged

Exit status: 0 ok; 1 the script raised (the report is still written, with the traceback);
2 bad arguments (unknown instance, malformed price); 3 a ``--fail-on`` condition holds;
130 interrupted (Ctrl-C; a partial report is written); 128+N this command was sent signal N
(SIGTERM, SIGINT, SIGHUP: passed on to the script, whose report says interrupted).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import time

from .cli_args import positive_int

EXIT_OK, EXIT_SCRIPT_ERROR, EXIT_USAGE, EXIT_GATE, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


def add_parser(sub) -> None:
    e = sub.add_parser(
        "evaluate",
        help="run a script instrumented and write the Trainium migration report",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    e.add_argument(
        "--steps",
        type=positive_int,
        help="stop after N steps (optimizer steps or evaluate.step() calls)",
    )
    e.add_argument("--out", default="neuron-eval", help="output folder (default ./neuron-eval)")
    e.add_argument("--no-html", action="store_true", help="write the JSON only")
    e.add_argument(
        "--fail-on",
        default="",
        help="comma-separated: fallback,recompile,numerics,memory -> exit 3",
    )
    e.add_argument(
        "--instances",
        help="comma-separated instance profiles to project on "
        "(default trn2.3xlarge,trn2.48xlarge,trn3.3xlarge)",
    )
    e.add_argument(
        "--lnc", type=int, choices=[1, 2], help="only this logical core size (default: both)"
    )
    e.add_argument(
        "--price", help="override prices, e.g. trn2.3xlarge=2.24,trn3.3xlarge=4.1 (USD per hour)"
    )
    e.add_argument(
        "--samples-per-step",
        type=positive_int,
        help="samples per step per rank (throughput figures)",
    )
    e.add_argument(
        "--tokens-per-step",
        type=positive_int,
        help="tokens per step per rank (tokens/s and USD per 1M tokens)",
    )
    e.add_argument(
        "--fake",
        action="store_true",
        help="trace one step with fake tensors (no memory, no data): "
        "FLOPs, bytes, memory and time at full size",
    )
    e.add_argument(
        "--fsdp",
        type=positive_int,
        default=1,
        help="--fake: FSDP / data-parallel sharding degree",
    )
    e.add_argument("--tp", type=positive_int, default=1, help="--fake: tensor-parallel degree")
    e.add_argument(
        "--reference",
        help="numerics: re-run the script with the neuron device mapped to this device (cpu; "
        "cuda where present; auto) and compare per-step loss and gradient norm; a compiled "
        "script is also re-run on neuron eagerly (docs/evaluate.md)",
    )
    e.add_argument(
        "--tolerance",
        help="relative tolerances of the numerics verdict, e.g. loss=1e-4,grad_norm=1e-3",
    )
    e.add_argument("--quiet", action="store_true", help="no summary or progress bar")
    e.add_argument("script", help="the Python script to run")
    e.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    e.set_defaults(fn=cmd_evaluate)


def _fail_on(text: str) -> list:
    from .build import FAIL_ON

    items = [x.strip() for x in (text or "").split(",") if x.strip()]
    bad = [x for x in items if x not in FAIL_ON]
    if bad:
        raise ValueError(
            f"unknown --fail-on value(s) {', '.join(bad)}; valid: {', '.join(FAIL_ON)}"
        )
    return items


def cmd_evaluate(args) -> int:
    import torch  # noqa: F401  (registers the backend)

    from . import profiles as _profiles

    try:
        fail_on = _fail_on(args.fail_on)
        prices = _profiles.parse_prices(args.price)
        profs = _profiles.profiles(
            args.instances.split(",") if args.instances else None, args.lnc, prices
        )
        tolerances = _tolerances(args.tolerance)
        if "numerics" in fail_on and not args.reference:  # a gate that could never hold
            raise ValueError("--fail-on numerics compares with a reference: add --reference cpu")
        if args.reference:
            from .reference import validate_device

            args.reference = validate_device(args.reference)
            if args.fake:
                raise ValueError("--reference compares computed values; --fake computes none")
    except ValueError as e:
        print(f"torch-neuronx evaluate: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    work = {
        k: v
        for k, v in (
            ("samples_per_step", args.samples_per_step),
            ("tokens_per_step", args.tokens_per_step),
        )
        if v
    }
    if args.fake:
        return _fake_cmd(args, profs, work, fail_on)
    return _run_cmd(args, profs, work, fail_on, tolerances)


def _tolerances(text: str | None) -> dict:
    """'loss=1e-4,grad_norm=1e-3' -> the verdict's relative tolerances (defaults for the rest)."""
    out = {"loss": 1e-4, "grad_norm": 1e-3, "output": 1e-3}
    for part in (text or "").split(","):
        if not part.strip():
            continue
        name, sep, value = part.strip().partition("=")
        if not sep or name not in out:
            raise ValueError(
                f"malformed --tolerance {part!r}: expected QUANTITY=RTOL with QUANTITY one of "
                + ", ".join(out)
            )
        try:
            out[name] = float(value)
        except ValueError:
            raise ValueError(f"malformed --tolerance {part!r}: {value!r} is not a number") from None
        if not math.isfinite(out[name]) or out[name] < 0:  # nan would pass every comparison
            raise ValueError(f"malformed --tolerance {part!r}: a tolerance is a finite number >= 0")
    return out


def _run_cmd(args, profs, work, fail_on, tolerances) -> int:
    from . import build, isolate, render_text
    from .runner import rank_and_world
    from .session import write

    rank, world = rank_and_world()
    script = os.path.abspath(args.script)
    if not os.path.isfile(script):
        print(f"torch-neuronx evaluate: error: no such script: {script}", file=sys.stderr)
        return EXIT_USAGE
    # the script runs in a worker (isolate.py): this process alone writes the report and
    # chooses the exit status, whatever the script does to its own process
    state: dict = {}
    rep, got = isolate.run(
        lambda: _collect(args, profs, work, tolerances, rank, world, state),
        lambda status, stack: _hard_exit_report(state, status, stack, rank, world),
    )
    if isinstance(rep, isolate.Ended):  # killed by a signal: no data came back
        rep = _ended_report(args, profs, work, tolerances, rank, world, rep)
    _interrupted(rep, got)
    stem = "report" if world == 1 else f"report-rank{rank}"
    rep["fail_on"] = {"requested": fail_on, "triggered": build.gate(rep, fail_on)}
    paths = write(rep, args.out, stem, html=not args.no_html)
    if world > 1 and rank == 0:
        merged = merge_ranks(args.out, world, rep)
        paths["merged"] = write(merged, args.out, "report", html=not args.no_html)["json"]
    if not args.quiet and (rank == 0 or world == 1):
        render_text.print_summary(rep, paths)
    return _exit_status(rep, got)


def _exit_status(rep: dict, got: str | None) -> int:
    if got:  # the harness was sent a signal: 128 + its number, as a process it ended
        return 128 + signal.Signals[got]
    if rep["status"] == "interrupted":
        return EXIT_INTERRUPTED
    if rep["status"] != "ok":
        return EXIT_SCRIPT_ERROR
    if rep["fail_on"]["triggered"]:
        print(
            "torch-neuronx evaluate: --fail-on: " + "; ".join(rep["fail_on"]["triggered"]),
            file=sys.stderr,
        )
        return EXIT_GATE
    return EXIT_OK


def _interrupted(rep: dict, got: str | None) -> None:
    """The report of a run the harness was sent ``got`` (a signal name) during: interrupted."""
    if not got:
        return
    message = f"interrupted: torch-neuronx evaluate received {got} and passed it on to the script"
    err = rep.get("error")
    if err and err.get("type") not in ("signal", "KeyboardInterrupt"):
        message += f" (which then ended with {err['type']}: {err['message']})"
    rep["status"] = "interrupted"
    rep["error"] = {
        "type": "interrupted",
        "message": message,
        "traceback": (err or {}).get("traceback", ""),
    }
    rep["readiness"] = [i for i in rep["readiness"] if "ended by signal" not in i["item"]]
    rep["readiness"].insert(0, {"status": "fail", "item": message})


def _evaluation(args, profs, work, tolerances, progress=None):
    from .session import Evaluation

    return Evaluation(
        "script",
        profs,
        steps=args.steps,
        work=work,
        progress=progress,
        argv=[args.script, *args.args],
        tolerances=tolerances,
    )


def _collect(args, profs, work, tolerances, rank, world, state) -> dict:
    """In the worker: the instrumented run, the reference re-runs, and the report's data."""
    from . import isolate, render_text
    from .runner import run_script

    progress = render_text.Progress(args.steps, enabled=not args.quiet and rank == 0)
    ev = state["ev"] = _evaluation(args, profs, work, tolerances, progress)
    try:
        code = run_script(ev, args.script, args.args)
    finally:
        progress.close()
    isolate.leave_if_forked(code)  # a child the script forked ends as the script left it
    runs, note = None, None
    if args.reference and world > 1:
        note = "--reference is not supported under torchrun (one process re-runs one script)"
    elif args.reference and ev.status != "ok":
        note = f"no reference run: the evaluated run did not finish ({ev.status})"
    elif args.reference:
        from .reference import runs_for

        if not args.quiet:
            print(f"torch-neuronx evaluate: re-running on {args.reference} for the numerics...")
        try:
            runs, note = runs_for(ev, args.reference, args.script, args.args, args.steps, args.out)
        except KeyboardInterrupt as e:  # Ctrl-C during the re-runs: the report still comes
            ev.fail(e, status="interrupted")
            note = "the reference run was interrupted (Ctrl-C): numerics not compared"
    return ev.report(rank=rank, world_size=world, runs=runs, numerics_note=note)


def _ended(rep: dict, message: str) -> dict:
    """The report of a script that ended its own process: a blocking error and finding."""
    rep["readiness"].insert(0, {"status": "fail", "item": message})
    return rep


def _hard_exit_report(state, status, stack, rank, world) -> dict:
    """In the worker, inside the script's ``os._exit(status)``: what was collected until then."""
    ev = state["ev"]
    ev.__exit__(None, None, None)  # stops the collectors (the run never reaches its end)
    ev.status = "error"
    message = f"the script ended its process with os._exit({status})"
    ev.error = {"type": "os._exit", "message": message, "traceback": stack}
    return _ended(ev.report(rank=rank, world_size=world), message)


def _ended_report(args, profs, work, tolerances, rank, world, ended) -> dict:
    """In the harness, when the worker died without handing data back (a signal)."""
    ev = _evaluation(args, profs, work, tolerances)
    ev.status = "error"
    ev.error = {"type": ended.kind, "message": ended.message, "traceback": ""}
    return _ended(ev.report(rank=rank, world_size=world), ended.message)


def merge_ranks(out_dir: str, world: int, own: dict, timeout_s: float = 120.0) -> dict:
    """Rank 0's merged report: its own sections plus one summary row per rank (waits for the
    other ranks' report-rankN.json files)."""
    deadline = time.time() + timeout_s
    reps = {0: own}
    while len(reps) < world and time.time() < deadline:
        for r in range(1, world):
            path = os.path.join(out_dir, f"report-rank{r}.json")
            if r not in reps and os.path.exists(path):
                try:
                    with open(path) as f:
                        reps[r] = json.load(f)
                except json.JSONDecodeError:  # still being written
                    pass
        if len(reps) < world:
            time.sleep(0.2)
    merged = dict(own)
    merged["mode"] = "script (merged ranks)"
    rows = []
    for r in range(world):
        x = reps.get(r)
        if x is None:
            rows.append({"rank": r, "status": "missing (no report within the timeout)"})
            continue
        rows.append(
            {
                "rank": r,
                "status": x["status"],
                "steps": x["steps_completed"],
                "fallback_calls": x["placement"]["fallback_calls"],
                "host_syncs": x["host_sync"]["total"],
                "peak_allocated": x["memory"]["peak_allocated"],
                "modeled_step_s": x["projection"]["modeled_step_s_emulated"],
                "recompiles": len(x["compilation"]["recompiles"]),
            }
        )
    merged["ranks"] = rows
    merged["rank"] = "merged"
    if any(r.get("status") != "ok" for r in rows):
        merged["status"] = next(r["status"] for r in rows if r.get("status") != "ok")
    return merged


def _fake_cmd(args, profs, work, fail_on) -> int:
    from . import isolate, render_text
    from .session import write

    script = os.path.abspath(args.script)
    if not os.path.isfile(script):
        print(f"torch-neuronx evaluate: error: no such script: {script}", file=sys.stderr)
        return EXIT_USAGE
    # one runner for every mode: the trace runs in the worker too (isolate.py)
    state: dict = {}
    rep, got = isolate.run(
        lambda: _fake_collect(args, profs, work, fail_on, script, state),
        lambda status, stack: _fake_hard_exit(args, profs, work, fail_on, state, status, stack),
    )
    if isinstance(rep, isolate.Ended):  # killed by a signal: no data came back
        rep = _fake_ended(args, profs, work, fail_on, rep)
    _interrupted(rep, got)
    paths = write(rep, args.out, "report", html=not args.no_html)
    if not args.quiet:
        render_text.print_summary(rep, paths)
    if got or rep["status"] != "ok":
        return _exit_status(rep, got)
    return EXIT_GATE if rep["fail_on"]["triggered"] else EXIT_OK


def _fake_collect(args, profs, work, fail_on, script, state) -> dict:
    """In the worker: the script traced with fake tensors, and the report's data."""
    import runpy

    from torch.optim.optimizer import register_optimizer_step_post_hook

    from . import callsite, fake, isolate
    from .collector import StepLimitReached

    callsite.add_user_root(os.path.dirname(script))
    state.update(status="ok", error=None, optimizers=[], t0=time.perf_counter())
    optimizers = state["optimizers"]

    def _end_step(opt, a, k):  # the traced step ends here (the fake recorder stops at the next one)
        if opt not in optimizers:
            optimizers.append(opt)
        if "rec" in state:
            state["rec"].end_step()

    saved_argv = sys.argv
    sys.argv = [script, *args.args]
    sys.path.insert(0, os.path.dirname(script))  # as `python script.py`: `import model` beside it
    hook = register_optimizer_step_post_hook(_end_step)
    left = None
    try:
        with fake.fake_session() as rec:
            state["rec"] = rec
            try:
                runpy.run_path(script, run_name="__main__")
            except StepLimitReached:
                pass
            except SystemExit as e:
                left = e
                if e.code not in (None, 0):
                    state["status"] = "error"
            except KeyboardInterrupt as e:
                left = e
                state["status"] = "interrupted"
            except Exception as e:
                import traceback

                left = e
                state["status"] = "error"
                state["error"] = {
                    "type": type(e).__name__,
                    "message": str(e),
                    "traceback": traceback.format_exc(),
                }
            isolate.leave_if_forked(isolate.exit_code(left))
            params = [p for o in optimizers for g in o.param_groups for p in g["params"]]
            static = fake.static_bytes(params, optimizers)
    finally:
        hook.remove()
        sys.argv = saved_argv
        if sys.path and sys.path[0] == os.path.dirname(script):
            sys.path.pop(0)
    return _fake_report(args, profs, work, fail_on, state, static)


def _fake_flops_check(fk: dict, static: dict, work: dict) -> dict | None:
    """The traced FLOPs beside 6 x parameters x tokens (sanity.six_nd); parameters from the
    optimizers' bytes are not a count, so the recorder's parameter count is used."""
    from . import sanity

    return sanity.six_nd(
        fk.get("flops_per_step") or 0, static.get("parameter_count"), work.get("tokens_per_step")
    )


def _fake_hard_exit(args, profs, work, fail_on, state, status, stack) -> dict:
    """In the worker, inside the script's ``os._exit(status)``: the trace until then."""
    from . import fake

    optimizers = state.get("optimizers", [])
    params = [p for o in optimizers for g in o.param_groups for p in g["params"]]
    message = f"the script ended its process with os._exit({status})"
    state["status"] = "error"
    state["error"] = {"type": "os._exit", "message": message, "traceback": stack}
    rep = _fake_report(args, profs, work, fail_on, state, fake.static_bytes(params, optimizers))
    return _ended(rep, message)


def _fake_ended(args, profs, work, fail_on, ended) -> dict:
    """In the harness, when the fake worker died without handing data back (a signal)."""
    from . import fake

    state = {
        "status": "error",
        "error": {"type": ended.kind, "message": ended.message, "traceback": ""},
        "rec": fake.FakeStepRecorder(),  # nothing traced came back
    }
    rep = _fake_report(args, profs, work, fail_on, state, fake.static_bytes([], []))
    return _ended(rep, ended.message)


def _fake_report(args, profs, work, fail_on, state, static) -> dict:
    """The ``--fake`` report of what the recorder in ``state`` traced."""
    import resource

    from . import build, fake, findings

    rec = state.get("rec") or fake.FakeStepRecorder()
    rep = build.header("fake", [args.script, *args.args])
    rep.update({"status": state["status"], "error": state["error"], "rank": 0, "world_size": 1})
    inferred = fake.inferred_work(rec)
    if inferred:  # as the API infers them; the command line's figures win
        work = {
            **{k: inferred[k] for k in ("samples_per_step", "tokens_per_step") if k in inferred},
            **work,
        }
    rep["work"] = work
    rep["fake_projection"] = fake.project(
        rec, profs, dp=args.fsdp, tp=args.tp, static=static, work=work
    )
    rep["fake_projection"]["flops_check"] = _fake_flops_check(rep["fake_projection"], static, work)
    t0 = state.get("t0")
    rep["fake_projection"]["trace_wall_s"] = time.perf_counter() - t0 if t0 else 0.0
    rep["fake_projection"]["host_max_rss_bytes"] = (
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    )
    rep["touched_neuron"] = rec.ops > 0
    rep["steps_completed"] = 1 if rec.stop_at_next_step else 0
    if not rec.ops:
        rep["notice"] = "the script never ran an op on the neuron device (under fake tensors)"
    if rep["status"] != "ok":  # a crashed trace: its partial figures are no projection
        rep["fake_projection"] = {
            "withheld": f"withheld: the fake trace did not complete (status {rep['status']})",
            "profiles": [],
            "data_dependence": rep["fake_projection"]["data_dependence"],
            "trace_wall_s": rep["fake_projection"]["trace_wall_s"],
            "host_max_rss_bytes": rep["fake_projection"]["host_max_rss_bytes"],
        }
    rep["blocking"] = [i for i in findings.blocking(rep, None) if rep["status"] != "ok"]
    if rep["status"] == "error" and not rep["blocking"]:  # SystemExit: no traceback to point at
        rep["blocking"] = [
            {"status": "fail", "item": "The fake trace ended with an error", "site": None}
        ]
    rep["readiness"] = build.readiness({"touched_neuron": rec.ops > 0, "blocking": rep["blocking"]})
    if rec.fallbacks:
        rep["readiness"] = [i for i in rep["readiness"] if "natively" not in i["item"]]
        rep["readiness"].insert(
            0,
            {
                "status": "fail",
                "item": "ops without a Neuron lowering (CPU fallback): "
                + ", ".join(sorted(rec.fallbacks)),
            },
        )
    if rep["fake_projection"]["data_dependence"]:
        d = rep["fake_projection"]["data_dependence"][0]
        rep["readiness"].append(
            {
                "status": "warn",
                "item": f"the step reads device values on the host (data "
                f"dependence) at {d['site']}: {d['line']}",
            }
        )
    for c in rep["fake_projection"].get("cuda_calls") or []:
        rep["readiness"].append(
            {
                "status": "warn",
                "item": f"CUDA call {c['call']} x{c['count']} at {c['site']} ran on neuron under "
                f"--fake: use {c['fix']}",
            }
        )
    triggered = []
    if "fallback" in fail_on and rec.fallbacks:
        triggered.append(f"fallback: {sum(rec.fallbacks.values())} op calls without a lowering")
    fk_rows = rep["fake_projection"]["profiles"]
    if "memory" in fail_on and fk_rows and not any(r["fits"] for r in fk_rows):
        triggered.append("memory: the layout does not fit one core of any profile")
    rep["fail_on"] = {"requested": fail_on, "triggered": triggered}
    return rep
