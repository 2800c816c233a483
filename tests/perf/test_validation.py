"""The validation table (issue 10, point 8): the model beside the public reference figures, and
docs/perf-model.md showing what the code computes."""

from pathlib import Path

import pytest

from torch_neuronx.perf import collective_validation, validation

DOC = Path(__file__).resolve().parents[2] / "docs" / "perf-model.md"


@pytest.fixture(scope="module")
def rows():
    return validation.all_rows()


def test_peaks_and_bandwidths_are_close_to_the_published_figures(rows):
    for r in rows:
        if r.anchor == "Trainium HBM bandwidth":
            # issue 23: each NeuronCore-v2's DMA engines move 272 GB/s [DMA], 2 x 272 of the
            # chip's 820 GiB/s (880 GB/s)
            assert r.ratio == pytest.approx(544 / 880.5, rel=0.01), r
        elif r.unit in ("TFLOP/s", "GB/s"):
            # per-core x cores sits at most 13% below the chip pages; never above them by > 1%
            assert 0.85 <= r.ratio <= 1.01, r


def test_workload_predictions_are_within_the_documented_band(rows):
    workloads = [r for r in rows if r.unit in ("seq/s", "ms")]
    assert len(workloads) == 5
    for r in workloads:
        # modeled speed / published speed; the docs give the band: 0.5-3x either way since
        # issue 23 put collectives at their measured cost (training 0.49, decode 1.6-3x
        # optimistic, prefill 1.3-1.5x pessimistic)
        speedup = r.ratio if r.unit == "seq/s" else 1 / r.ratio
        assert 0.45 <= speedup <= 3.1, r


def test_docs_table_is_the_generated_one(rows):
    text = DOC.read_text()
    assert "No Trainium was used" in text or "**No Trainium was used**" in text
    generated = (
        validation.markdown(rows)
        + "\n"
        + validation.hardware_markdown()
        + "\n"
        + validation.sources_markdown()
        + "\n"
        + collective_validation.both_markdown()
    )
    for line in generated.splitlines():
        assert line in text, (
            f"docs/perf-model.md is stale; regenerate with python -m torch_neuronx.perf.validation:\n{line}"
        )
