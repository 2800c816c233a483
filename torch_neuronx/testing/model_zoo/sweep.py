"""Runs the model-zoo sweep and writes its table into docs/coverage.md.

    python -m torch_neuronx.testing.model_zoo                      # every model, both modes
    python -m torch_neuronx.testing.model_zoo --models hf:llama,hf:bert --modes eager
    python -m torch_neuronx.testing.model_zoo --suites timm --retry fail,timeout

Models run in worker interpreters (`--worker`), `--chunk` models per worker one after the
other (starting Python and importing torch, transformers and timm costs more than a small
model's check), each model under its own time limit: a model that crashes its worker or
stalls is recorded as a failure of its own (``timeout`` for a stall), and the models after it
go on in a fresh worker. Results are appended to a JSON-lines file as they come, and a rerun
skips the (model, mode) pairs that file already holds (`--fresh` starts over, `--retry`
reruns the pairs with the given statuses), so a long sweep can be resumed.
"""

from __future__ import annotations

import argparse
import json
import os
import selectors
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator

from torch_neuronx.testing.model_zoo import policy, report, zoo

_PREFIX = "MODEL_ZOO_RESULT "
# The worker names each phase of a model's check before it starts it (train_check.check's
# `phase`): a crash that kills the worker is then the CPU reference's (`cpu_error`: the model
# is outside the sweep, as when the reference raises) or the device's (`fail`). timm's
# fastvit_t8 aborts in CPU's own convolution backward (oneDNN #6035, docs/eager.md) and was
# recorded as a device failure before.
_PHASE = "MODEL_ZOO_PHASE "


def _worker(models: list[str], modes: tuple[str, ...]) -> int:
    from torch_neuronx.testing.model_zoo import train_check

    def phase(name: str) -> None:
        print(_PHASE + name, flush=True)

    def report(outcome) -> None:  # each mode's row as soon as it is known
        print(_PREFIX + json.dumps(outcome.to_json()), flush=True)

    for model in models:
        train_check.check(model, zoo.builder(model), modes=modes, phase=phase, on_outcome=report)
    return 0


def _worker_command(models: list[str], modes: tuple[str, ...]) -> list[str]:
    cmd = [sys.executable, "-m", "torch_neuronx.testing.model_zoo", "--worker"]
    return cmd + [",".join(models), "--modes", ",".join(modes)]


def _crash_rows(model: str, modes, done: set[str], phase: str | None, why: str) -> list[dict]:
    """The rows of the modes of `model` a dead worker did not report, by the phase it died in:
    the CPU reference's crash makes every mode `cpu_error`; any other is the modes' failure."""
    from torch_neuronx.testing.model_zoo import train_check

    left = [m for m in modes if m not in done]
    if phase == train_check.CPU_REFERENCE:
        return _failed(model, left, "cpu_error", f"CPU reference crashed: {why}")
    where = f" (in {phase})" if phase else ""
    return _failed(model, left, "fail", f"crash{where}: {why}")


def _failed(model: str, modes, status: str, why: str) -> list[dict]:
    return [{"model": model, "mode": m, "status": status, "detail": why} for m in modes]


# A model's limit is CPU time: on the shared 2-core machine a worker may get a fifth of a core,
# and a wall-clock limit then times out models that are merely starved (the first compiled
# sweep timed out every model at load 7). The wall clock still bounds a stalled worker.
_WALL_FACTOR = 4.0
_POLL = 2.0


def _cpu_seconds(pid: int) -> float:
    """CPU time of process `pid` and its reaped children (Inductor's g++ runs); 0 where /proc
    cannot tell (the wall-clock bound then decides)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def _idle_seconds() -> float:
    """Idle CPU seconds of the whole machine since boot (all cores); 0 where /proc cannot tell."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()[1:]
    except OSError:
        return 0.0
    return (int(fields[3]) + int(fields[4])) / os.sysconf("SC_CLK_TCK")  # idle + iowait


def _over_wall(model: str, modes, timeout: float, cpu: float, wall: float, idle: float):
    """The rows of a model stopped by the wall-clock bound before its CPU limit. A worker the
    machine had no idle CPU to give (`idle` seconds were idle meanwhile, fewer than it still
    had the right to use) was starved, not slow: its rows are `starved`, never written, and a
    rerun tries the model again. One that left the CPU idle stalled: a timeout."""
    if idle < timeout - cpu:
        why = f"starved: {cpu:.0f} CPU s in {wall:.0f} s, the machine idle {idle:.0f} CPU s"
        return _failed(model, modes, STARVED, why)
    why = f"stalled: {cpu:.0f} CPU s in {wall:.0f} s with {idle:.0f} CPU s idle"
    return _failed(model, modes, "timeout", f"no result within {timeout:.0f} CPU s ({why})")


#: the status of rows of a starved worker (see _over_wall): reported, not recorded
STARVED = "starved"
#: the status of a (model, mode) pair the policy excludes by name (policy.excluded): not run
EXCLUDED = "excluded"


def run_chunk(models: list[str], modes: tuple[str, ...], timeout: float) -> Iterator[list[dict]]:
    """Each model's rows, in order, from workers that run `models` one after the other; the
    model running when a worker crashes, uses its limit of CPU seconds (`timeout`, or longer
    where policy.LONG_LIMITS says), or runs `_WALL_FACTOR` x that limit in wall seconds gets
    failure rows."""
    pending = list(models)
    while pending:
        cmd = _worker_command(pending, modes)
        phase: str | None = None  # the phase of the pending model the worker last named
        with tempfile.TemporaryFile("w+") as err:  # a file: a full pipe would block the worker
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True)
            sel = selectors.DefaultSelector()
            sel.register(proc.stdout, selectors.EVENT_READ)
            rows: list[dict] = []
            started, cpu0, idle0 = time.monotonic(), _cpu_seconds(proc.pid), _idle_seconds()
            while pending:
                ready = sel.select(timeout=_POLL)
                cpu = _cpu_seconds(proc.pid) - cpu0
                wall = time.monotonic() - started
                limit = policy.limit(pending[0], timeout)
                # checked on every line too: a worker printing other lines is not exempt
                if cpu >= limit or wall >= _WALL_FACTOR * limit:
                    proc.kill()
                    proc.wait()
                    # the modes the worker reported keep their rows (an eager pass before
                    # the compiled mode ran out of time)
                    left = [m for m in modes if m not in {r["mode"] for r in rows}]
                    if cpu >= limit:  # its own status: a slow model is not a wrong one
                        why = f"no result within {limit:.0f} CPU s ({cpu:.0f} CPU s, {wall:.0f} s)"
                        yield rows + _failed(pending.pop(0), left, "timeout", why)
                    else:
                        idle = _idle_seconds() - idle0
                        yield rows + _over_wall(pending.pop(0), left, limit, cpu, wall, idle)
                    break
                if not ready:
                    continue
                line = proc.stdout.readline()
                if not line:  # the worker died
                    proc.wait()
                    err.seek(0)
                    tail = (err.read().strip().splitlines() or [""])[-1][:300]
                    model = pending.pop(0)
                    done = {r["mode"] for r in rows}
                    why = f"worker exited with {proc.returncode}: {tail}"
                    yield rows + _crash_rows(model, modes, done, phase, why)
                    break
                if line.startswith(_PHASE):
                    phase = line[len(_PHASE) :].strip()
                    continue
                if not line.startswith(_PREFIX):
                    continue
                rows.append(json.loads(line[len(_PREFIX) :]))
                if len(rows) == len(modes):
                    pending.pop(0)
                    yield rows
                    rows, phase = [], None
                    started, cpu0, idle0 = time.monotonic(), _cpu_seconds(proc.pid), _idle_seconds()
            else:
                proc.wait()
            sel.close()
            proc.stdout.close()


def run_isolated(model: str, modes: tuple[str, ...], timeout: float) -> list[dict]:
    """`model`'s rows, from a worker of its own."""
    return next(run_chunk([model], modes, timeout))


def _rows(path: str) -> list[dict]:
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def _append(path: str, rows: list[dict]) -> None:
    if not rows:
        return
    with open(path, "a") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")


def _done(path: str, retry: set[str]) -> set[tuple[str, str]]:
    """The (model, mode) pairs `path` already holds, but for those whose last row has a status
    in `retry`: a rerun with another `--modes` (an eager pass over every model first,
    compiled after) goes on where the file stops."""
    last = {(r["model"], r["mode"]): r["status"] for r in _rows(path)}
    return {pair for pair, status in last.items() if status not in retry}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="", help="comma-separated suite:name (default: all)")
    ap.add_argument("--suites", default=",".join(zoo.SUITES))
    ap.add_argument("--modes", default="eager,compiled")
    ap.add_argument("--timeout", type=float, default=900.0, help="limit per model (CPU s)")
    ap.add_argument("--chunk", type=int, default=8, help="models per worker process")
    # kept in the repository: a sweep takes longer than a session on the 2-core machine, so
    # the next one goes on from what the last one recorded (and the table is rebuilt from it)
    ap.add_argument("--results", default=os.path.join("docs", "model-zoo-results.jsonl"))
    ap.add_argument("--out", default=os.path.join("docs", "coverage.md"))
    ap.add_argument("--fresh", action="store_true", help="forget earlier results")
    ap.add_argument("--retry", default="", help="rerun pairs with these statuses (fail,timeout)")
    ap.add_argument("--no-write", action="store_true", help="do not rewrite --out")
    ap.add_argument("--report-only", action="store_true", help="rewrite --out, run nothing")
    ap.add_argument("--note", default="", help="what this run covered, for the report")
    ap.add_argument("--worker", default="", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    modes = tuple(m for m in args.modes.split(",") if m)
    if args.worker:
        return _worker(args.worker.split(","), modes)

    if args.fresh and os.path.exists(args.results):
        os.remove(args.results)
    suites = [s for s in args.suites.split(",") if s]
    unavailable = {s: zoo.available(s) for s in suites}
    if args.models:
        todo = [m for m in args.models.split(",") if m]
    else:
        todo = [m for s, why in unavailable.items() if not why for m in zoo.models(s)]
    if args.report_only:
        todo = []
    done = _done(args.results, set(args.retry.split(",")) - {""})
    # one worker runs one set of modes: group the models by the modes they still need
    groups: dict[tuple[str, ...], list[str]] = {}
    for m in todo:
        need = tuple(x for x in modes if (m, x) not in done)
        # a pair the policy excludes by name is not run: its row says why
        skipped = tuple(x for x in need if policy.excluded(m, x))
        _append(
            args.results, [_failed(m, (x,), EXCLUDED, policy.excluded(m, x))[0] for x in skipped]
        )
        need = tuple(x for x in need if x not in skipped)
        if need:
            groups.setdefault(need, []).append(m)
    count = 0
    total = sum(len(v) for v in groups.values())
    for need, models in groups.items():
        for start in range(0, len(models), max(args.chunk, 1)):
            for rows in run_chunk(models[start : start + args.chunk], need, args.timeout):
                _append(args.results, [r for r in rows if r["status"] != STARVED])
                count += 1
                summary = ", ".join(f"{r['mode']} {r['status']}" for r in rows)
                print(f"[{count}/{total}] {rows[0]['model']}: {summary}", flush=True)
    if not args.no_write:
        rows = _rows(args.results)
        totals = {s: len(zoo.models(s)) for s, why in unavailable.items() if not why}
        missing = {s: w for s, w in unavailable.items() if w}
        report.write(args.out, report.section(rows, missing, totals, args.note))
    return 0
