"""Shared helpers for distributed test workers (one process per rank)."""

from __future__ import annotations

import faulthandler
import json
import os
import sys
import traceback

import torch

RESULTS: dict = {}

# a hung rank dumps every thread's stack (into the launch log) before the harness kills it
if os.environ.get("NX_HANG_DUMP_S"):
    faulthandler.dump_traceback_later(float(os.environ["NX_HANG_DUMP_S"]), exit=True)


def rank() -> int:
    return int(os.environ["RANK"])


def record(name: str, fn, *a, **k):
    """Run one check; store ok / error text under ``name`` (never raises)."""
    print(f"[nx] {name}", file=sys.stderr, flush=True)
    try:
        value = fn(*a, **k)
        RESULTS[name] = {"ok": True, "value": value}
    except Exception as e:  # noqa: BLE001 - reported to the test
        RESULTS[name] = {
            "ok": False,
            "error": f"{type(e).__name__}: {e}",
            "trace": traceback.format_exc()[-3000:],
        }


def write_results(extra: dict | None = None):
    out = os.environ["NX_TEST_OUT"]
    data = dict(RESULTS)
    if extra:
        data.update(extra)
    path = os.path.join(out, f"rank{rank()}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(data, f, default=str)
    os.replace(path + ".tmp", path)


def same(a: torch.Tensor, b: torch.Tensor, what: str = ""):
    a = a.detach().cpu()
    b = b.detach().cpu()
    if a.dtype != b.dtype or a.shape != b.shape or not torch.equal(a, b):
        raise AssertionError(f"{what}: mismatch\n{a}\nvs\n{b}")


def close(a, b, what: str = "", tol: float = 1e-5):
    a = a.detach().cpu().double()
    b = b.detach().cpu().double()
    if a.shape != b.shape:
        raise AssertionError(f"{what}: shape {a.shape} vs {b.shape}")
    err = (a - b).abs().max().item() if a.numel() else 0.0
    if not err <= tol:
        raise AssertionError(f"{what}: max abs diff {err} > {tol}")
    return err
