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


def test_a_rewrite_keeps_every_marked_block(tmp_path):
    """A report rewrite replaces the generated part and keeps, unchanged and in order, every
    `<!-- NAME:begin ... -->` / `<!-- NAME:end -->` block of the old file: the PyTorch-tests
    section (tools/pytorch_tests.py) and the hand-kept float64 section (issue 13)."""
    from torch_neuronx.tools import coverage_sweep as cs
    from torch_neuronx.tools import pytorch_tests as pt

    pytorch_block = f"{pt._BEGIN}\n## PyTorch's own tests\n\n| a | b |\n{pt._END}"
    float64_block = (
        "<!-- float64-sweep:begin (kept by hand) -->\n## float64 and complex128\n\n"
        "measured by hand; <!-- not a marker --> stays\n<!-- float64-sweep:end -->"
    )
    doc = tmp_path / "coverage.md"
    doc.write_text(
        f"# Coverage\n\nold generated part\n\n{pytorch_block}\n\n{float64_block}\n\ntrailing\n"
    )
    cs.write_report(str(doc), "# Coverage\n\nnew generated part\n")
    text = doc.read_text()
    assert text == f"# Coverage\n\nnew generated part\n\n{pytorch_block}\n\n{float64_block}\n"
    cs.write_report(str(doc), "# Coverage\n\nnew generated part\n")
    assert doc.read_text() == text  # a second rewrite keeps each block once
    # a file without blocks (or none at all) gets the generated part only
    cs.write_report(str(tmp_path / "new" / "c.md"), "# Coverage\n")
    assert (tmp_path / "new" / "c.md").read_text() == "# Coverage\n"


def test_the_hand_kept_sections_of_docs_coverage_md_are_marked():
    """docs/coverage.md's sections that the sweep does not generate would be lost by a full
    rerun unless they are marked blocks."""
    import pathlib

    from torch_neuronx.tools import coverage_sweep as cs

    doc = pathlib.Path(__file__).resolve().parents[2] / "docs" / "coverage.md"
    blocks = cs.preserved_blocks(str(doc))
    assert [b.split(":begin", 1)[0] for b in blocks] == [
        "<!-- pytorch-tests",
        "<!-- float64-sweep",
        "<!-- layouts",
        "<!-- model-zoo",
    ]
    assert "\n## PyTorch's own device-generic tests" in blocks[0]
    assert "\n## float64 and complex128 (issue 13" in blocks[1]
    assert "\n## Memory layouts (issue 26)" in blocks[2]
    assert "model zoo" in blocks[3].lower()
    # nothing after the last block: the sweep writes the generated part before the blocks
    assert doc.read_text().rstrip("\n").endswith(blocks[-1])
