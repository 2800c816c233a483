"""The coverage sweep (torch_neuronx/tools/coverage_sweep.py) survives a crashing kernel: the
(op, category) being run is recorded as one ``crash`` failure and a fresh worker carries on
after it. ``COVERAGE_SWEEP_CRASH_ON=op:category`` makes the worker abort there."""

import json
import subprocess
import sys


def test_a_crash_is_recorded_and_the_sweep_continues(tmp_path, monkeypatch):
    results, report = tmp_path / "results.jsonl", tmp_path / "coverage.md"
    monkeypatch.setenv("COVERAGE_SWEEP_CRASH_ON", "abs:float32")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch_neuronx.tools.coverage_sweep",
            "--ci",
            "--ops",
            "abs",
            "--results",
            str(results),
            "--out",
            str(report),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "abs [float32]: crash (exit code -6); continuing" in r.stderr, r.stderr
    records = [json.loads(line) for line in results.read_text().splitlines()]
    crashes = [x for x in records if x.get("kind") == "crash"]
    assert [(x["op"], x["cat"], x["status"]) for x in crashes] == [("abs", "float32", "fail")]
    # the categories after the crashed one ran, in the restarted worker
    ran = {x["cat"] for x in records if x.get("status") == "pass"}
    assert ran == {"grad", "bfloat16", "integer", "float64", "complex128", "grad64"}, ran
    assert any(x.get("done") for x in records)
    assert "worker crash (exit code -6) while running this op/category" in report.read_text()
