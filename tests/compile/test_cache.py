"""Persistent compile cache: reuse across processes, integrity, concurrency, opt-out.

A second *process* is what the cache is for, so these tests run real child processes, each
compiling a tiny inference graph. To bound the suite's time (every child pays for importing
torch and Inductor) one child visits several cache directories in turn -- ``torch._dynamo``
and Inductor's in-memory caches are reset between them, so each directory is used exactly as
a fresh process would use it.

Each child checks its compiled result against eager itself (a wrong result fails with the
child's traceback) and reports, per directory, how the caches answered; the tests compare
those reports across the stages of the scenario.
"""

from __future__ import annotations

import glob
import json
import os
import shutil

import pytest

from torch_neuronx.testing import child

CHILD = """
import json, os, sys, torch
from torch_neuronx.compile import cache, get_dynamo_metrics, reset_dynamo_metrics
import torch._inductor.utils

def f(x, w):
    return torch.relu(x @ w).sum(dim=1) * 0.5

x = (torch.arange(12.0).reshape(3, 4) / 7).to("neuron")
w = (torch.arange(8.0).reshape(4, 2) - 3).to("neuron")
expected = f(x.cpu(), w.cpu())
reports = []
for spec in json.loads(sys.argv[1]):
    os.environ.update(spec.get("env", {}))
    os.environ["TORCH_NEURONX_NEFF_CACHE_DIR"] = spec["dir"]
    torch._dynamo.reset()
    torch._inductor.utils.clear_caches()
    reset_dynamo_metrics()
    n_reports = len(cache.corruption_reports)
    with torch.no_grad():
        out = torch.compile(f, backend="neuron")(x, w)
    assert out.device.type == "neuron", out.device
    torch.testing.assert_close(out.cpu(), expected, rtol=1e-5, atol=1e-6,
                               msg=lambda m: f"{spec['dir']}: {m}")
    reports.append({
        "dir": spec["dir"],
        "cache": [r["cache"] for r in get_dynamo_metrics()],
        "aot": [r["aot_cache"] for r in get_dynamo_metrics()],
        "reports": len(cache.corruption_reports) - n_reports,
    })
    for k in spec.get("env", {}):
        os.environ.pop(k)
print("REPORTS" + json.dumps(reports))
"""


def _child(specs):
    return child.start(CHILD, argv=[json.dumps(specs)])


def _results(proc):
    out, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, f"child failed:\n{out[-2000:]}\n{err[-8000:]}"
    lines = [line for line in out.splitlines() if line.startswith("REPORTS")]
    assert len(lines) == 1, out[-2000:] + err[-4000:]
    reports = json.loads(lines[0][len("REPORTS") :])
    return {os.path.basename(r["dir"]): r for r in reports}


def _manifests(cache_dir):
    return glob.glob(os.path.join(str(cache_dir), "compile-*", "entries", "*", "*.json"))


def _artifacts(cache_dir):
    files = []
    for m in _manifests(cache_dir):
        with open(m) as f:
            rels = json.load(f)["files"]
        root = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(m))), "inductor")
        files += [os.path.join(root, r) for r in rels]
    return sorted(set(files))  # the graph's and its ATen graphs' manifests share kernels


def _damage(d, how):
    arts = _artifacts(d)
    assert any(a.endswith(".so") for a in arts) and any(a.endswith(".py") for a in arts)
    if how == "truncate_kernel":  # e.g. a process killed while writing
        for a in arts:
            if a.endswith((".so", ".py")):
                with open(a, "r+b") as f:
                    f.truncate(max(1, os.path.getsize(a) // 3))
    elif how == "corrupt_manifest":  # manifest garbage *and* a broken kernel behind it
        for a in arts:
            if a.endswith(".so"):
                with open(a, "r+b") as f:
                    f.truncate(16)
        for m in _manifests(d):
            with open(m, "w") as f:
                f.write('{"key": "trunc')
    elif how == "delete_files":
        for a in arts:
            os.unlink(a)
    else:
        raise ValueError(how)


DAMAGES = ("truncate_kernel", "corrupt_manifest", "delete_files")


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    """Stage 1: one cold process fills ``warm`` (and compiles once with the cache disabled).
    Stage 2, in parallel: two processes compile into the empty ``shared`` directory at
    once (two race as more would: each writes the same entries; a process less in the
    suite), while a third process compiles against three damaged copies of ``warm``.
    Stage 3: one process revisits every directory."""
    base = tmp_path_factory.mktemp("cache")
    warm, disabled, shared = base / "warm", base / "disabled", base / "shared"
    stage1 = _results(
        _child(
            [
                {"dir": str(warm)},
                {"dir": str(disabled), "env": {"TORCH_NEURONX_NEFF_DISABLE_CACHE": "1"}},
            ]
        )
    )
    damaged = {}
    for how in DAMAGES:
        damaged[how] = base / f"damaged_{how}"
        shutil.copytree(warm, damaged[how])
        _damage(damaged[how], how)
    concurrent = [_child([{"dir": str(shared)}]) for _ in range(2)]
    repair = _child([{"dir": str(damaged[how])} for how in DAMAGES])
    stage2_concurrent = [_results(p) for p in concurrent]
    stage2_repair = _results(repair)
    stage3 = _results(
        _child(
            [{"dir": str(warm)}, {"dir": str(shared)}] + [{"dir": str(damaged[h])} for h in DAMAGES]
        )
    )
    return {
        "stage1": stage1,
        "concurrent": stage2_concurrent,
        "repair": stage2_repair,
        "stage3": stage3,
        "disabled_dir": disabled,
        "warm_dir": warm,
    }


def test_cold_process_misses_and_fills_the_cache(scenario):
    assert scenario["stage1"]["warm"]["cache"] == ["miss"]
    assert scenario["stage1"]["warm"]["reports"] == 0
    assert _manifests(scenario["warm_dir"])


def test_second_process_skips_code_generation(scenario):
    assert scenario["stage3"]["warm"]["cache"] == ["hit"]
    assert scenario["stage3"]["warm"]["aot"] == ["hit"]  # no AOTAutograd tracing either
    assert scenario["stage3"]["warm"]["reports"] == 0


@pytest.mark.parametrize("how", DAMAGES)
def test_corrupt_entry_is_detected_rebuilt_and_reported(scenario, how):
    first = scenario["repair"][f"damaged_{how}"]
    assert first["reports"] >= 1  # detected and reported (the run itself succeeded)
    again = scenario["stage3"][f"damaged_{how}"]
    assert again["cache"] == ["hit"] and again["aot"] == ["hit"] and again["reports"] == 0


def test_concurrent_processes_share_the_cache_safely(scenario):
    for res in scenario["concurrent"]:
        assert res["shared"]["reports"] == 0
    after = scenario["stage3"]["shared"]
    assert after["cache"] == ["hit"] and after["aot"] == ["hit"] and after["reports"] == 0


def test_disable_cache(scenario):
    assert scenario["stage1"]["disabled"]["cache"] == ["disabled"]
    d = scenario["disabled_dir"]
    assert not _manifests(d)
    assert not glob.glob(os.path.join(str(d), "compile-*", "inductor", "fxgraph"))
