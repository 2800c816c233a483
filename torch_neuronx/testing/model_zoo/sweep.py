"""Runs the model-zoo sweep and writes its table into docs/coverage.md.

    python -m torch_neuronx.testing.model_zoo                      # every model, both modes
    python -m torch_neuronx.testing.model_zoo --models hf:llama,hf:bert --modes eager

Each model runs in its own interpreter (`--worker`), under a time limit: a model that
crashes the process or stalls is recorded as a failure of its own and the sweep goes on.
Results are appended to a JSON-lines file as they come, and a rerun skips the models that
file already holds (`--fresh` starts over), so a long sweep can be resumed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from torch_neuronx.testing.model_zoo import report, zoo

_PREFIX = "MODEL_ZOO_RESULT "


def _worker(model: str, modes: tuple[str, ...]) -> int:
    from torch_neuronx.testing.model_zoo import train_check

    for outcome in train_check.check(model, zoo.builder(model), modes=modes):
        print(_PREFIX + json.dumps(outcome.to_json()), flush=True)
    return 0


def run_isolated(model: str, modes: tuple[str, ...], timeout: float) -> list[dict]:
    cmd = [sys.executable, "-m", "torch_neuronx.testing.model_zoo", "--worker", model]
    cmd += ["--modes", ",".join(modes)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        why = f"timeout: no result within {timeout:.0f} s"
        return [{"model": model, "mode": m, "status": "fail", "detail": why} for m in modes]
    rows = [
        json.loads(line[len(_PREFIX) :])
        for line in proc.stdout.splitlines()
        if line.startswith(_PREFIX)
    ]
    done = {r["mode"] for r in rows}
    tail = (proc.stderr.strip().splitlines() or [""])[-1][:300]
    for m in modes:
        if m not in done:  # the worker died before reporting this mode
            why = f"crash: worker exited with {proc.returncode}: {tail}"
            rows.append({"model": model, "mode": m, "status": "fail", "detail": why})
    return rows


def _done(path: str) -> set[str]:
    if not os.path.exists(path):
        return set()
    with open(path) as f:
        return {json.loads(line)["model"] for line in f if line.strip()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="", help="comma-separated suite:name (default: all)")
    ap.add_argument("--suites", default=",".join(zoo.SUITES))
    ap.add_argument("--modes", default="eager,compiled")
    ap.add_argument("--timeout", type=float, default=900.0, help="limit per model (s)")
    ap.add_argument("--results", default="/tmp/torch_neuronx_model_zoo.jsonl")
    ap.add_argument("--out", default=os.path.join("docs", "coverage.md"))
    ap.add_argument("--fresh", action="store_true", help="forget earlier results")
    ap.add_argument("--no-write", action="store_true", help="do not rewrite --out")
    ap.add_argument("--worker", default="", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    modes = tuple(m for m in args.modes.split(",") if m)
    if args.worker:
        return _worker(args.worker, modes)

    if args.fresh and os.path.exists(args.results):
        os.remove(args.results)
    unavailable = {s: zoo.available(s) for s in args.suites.split(",") if s}
    if args.models:
        todo = [m for m in args.models.split(",") if m]
    else:
        todo = [m for s, why in unavailable.items() if not why for m in zoo.models(s)]
    done = _done(args.results)
    todo = [m for m in todo if m not in done]
    for i, model in enumerate(todo, 1):
        rows = run_isolated(model, modes, args.timeout)
        with open(args.results, "a") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")
        summary = ", ".join(f"{r['mode']} {r['status']}" for r in rows)
        print(f"[{i}/{len(todo)}] {model}: {summary}", flush=True)
    if not args.no_write:
        with open(args.results) as f:
            rows = [json.loads(line) for line in f if line.strip()]
        total = sum(len(zoo.models(s)) for s, why in unavailable.items() if not why)
        missing = {s: w for s, w in unavailable.items() if w}
        report.write(args.out, report.section(rows, missing, total))
    return 0
