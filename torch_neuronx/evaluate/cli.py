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
        help="--fake only: FSDP / data-parallel sharding degree (default 1)",
    )
    e.add_argument(
        "--tp", type=positive_int, help="--fake only: tensor-parallel degree (default 1)"
    )
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
        if not args.fake and (args.fsdp or args.tp):  # a layout a measured run does not take
            raise ValueError(
                "--fsdp and --tp choose the layout of a --fake projection: add --fake (a "
                "measured run's layout is the script's own: run it under torchrun)"
            )
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
    """Every mode (the instrumented run, ``--reference``, ``--fake``): the script runs in a
    worker (isolate.py), so this process alone writes the report and chooses the exit status,
    whatever the script does to its own process; report.finish completes every mode's report."""
    from . import isolate, render_text
    from . import report as _report
    from .runner import rank_and_world
    from .session import write

    rank, world = (0, 1) if args.fake else rank_and_world()
    script = os.path.abspath(args.script)
    if not os.path.isfile(script):
        print(f"torch-neuronx evaluate: error: no such script: {script}", file=sys.stderr)
        return EXIT_USAGE
    state: dict = {}
    collect = _collect_fake if args.fake else _collect
    rep, got = isolate.run(
        lambda: collect(args, profs, work, tolerances, rank, world, state),
        lambda status, stack: _hard_exit_report(args, state, status, stack, rank, world),
    )
    blocking = []
    if isinstance(rep, isolate.Ended):  # killed by a signal: no data came back
        error = {"type": rep.kind, "message": rep.message, "traceback": ""}
        argv = [args.script, *args.args]
        mode = "fake" if args.fake else "script"
        blocking.append(rep.message)
        rep = _report.empty(mode, argv, profs, error=error, rank=rank, world_size=world)
    elif rep.get("ended"):  # os._exit in the script
        blocking.append(rep.pop("ended"))
    if got:  # the harness was sent a signal (and passed it on): interrupted, not an error
        blocking = [_interrupted(rep, got)]
    _report.finish(rep, fail_on, blocking)
    stem = "report" if world == 1 else f"report-rank{rank}"
    paths = write(rep, args.out, stem, html=not args.no_html)
    if world > 1 and rank == 0:
        merged = _report.finish(merge_ranks(args.out, world, rep), fail_on)
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


def _interrupted(rep: dict, got: str) -> str:
    """Marks the report of a run the harness was sent ``got`` (a signal name) during as
    interrupted; returns the blocking item."""
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
    rep["blocking"] = [b for b in rep.get("blocking") or [] if "ended by signal" not in b["item"]]
    return message


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
    """In the worker: the instrumented run, the reference re-runs, and the report's sections."""
    from . import isolate, render_text, runner

    progress = render_text.Progress(args.steps, enabled=not args.quiet and rank == 0)
    ev = state["ev"] = _evaluation(args, profs, work, tolerances, progress)
    try:
        with ev:
            outcome = runner.run(args.script, args.args, ev.tracker)
        ev.ran(outcome)
    finally:
        progress.close()
    isolate.leave_if_forked(
        outcome.exit_code
    )  # a child the script forked ends as the script left it
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


def _hard_exit_report(args, state, status, stack, rank, world) -> dict:
    """In the worker, inside the script's ``os._exit(status)``: what was collected until then
    (``ended``: the blocking item report.finish adds)."""
    message = f"the script ended its process with os._exit({status})"
    error = {"type": "os._exit", "message": message, "traceback": stack}
    if args.fake:
        from .runner import Outcome

        state["outcome"] = Outcome(status="error", error=error)
        rep = _fake_sections(args, state)
    else:
        ev = state["ev"]
        ev.__exit__(None, None, None)  # stops the collectors (the run never reaches its end)
        ev.status, ev.error = "error", error
        rep = ev.report(rank=rank, world_size=world)
    rep["ended"] = message
    return rep


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


def _collect_fake(args, profs, work, tolerances, rank, world, state) -> dict:
    """In the worker: the script traced with fake tensors (runner.py, as every mode), and the
    report's sections."""
    from . import fake, isolate, runner
    from .steps import StepTracker

    state.update(t0=time.perf_counter(), work=work, profs=profs)
    with fake.fake_session() as rec:
        # the traced step ends at the first optimizer step; the recorder stops at the next one
        state["rec"] = rec
        state["tracker"] = tracker = StepTracker(
            count="any", read_values=False, on_step=lambda loss, gn: rec.end_step()
        )
        state["outcome"] = outcome = runner.run(args.script, args.args, tracker)
        isolate.leave_if_forked(outcome.exit_code)
    return _fake_sections(args, state)  # outside the fake mode: the planner runs real tensors


def _fake_sections(args, state) -> dict:
    from . import fake
    from . import report as _report
    from .runner import Outcome

    return _report.fake(
        [args.script, *args.args],
        state.get("outcome") or Outcome(),
        state.get("rec") or fake.FakeStepRecorder(),
        state.get("tracker"),
        state["profs"],
        state["work"],
        dp=args.fsdp or 1,
        tp=args.tp or 1,
        t0=state.get("t0"),
    )
