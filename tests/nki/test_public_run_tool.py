"""torch_neuronx/tools/nki_public_run.py without the public sources: the collection is listed,
the import names are mapped, and a kernel that cannot be loaded is recorded, not raised."""

import sys

from torch_neuronx.tools import nki_public_run as run


def test_collection_lists_and_ids_are_unique(capsys):
    assert run.main(["unused", "--list"]) == 0
    out = capsys.readouterr().out
    ids = [c.id for c in run.CASES]
    assert len(ids) == len(set(ids)) == len(out.strip().splitlines())
    assert {c.api for c in run.CASES} == {"0.2+", "old"}
    assert all(c.path.split("/", 1)[0] in ("samples", "samples_ref", "library") for c in run.CASES)


def test_import_names_point_at_the_simulator(monkeypatch):
    names = ("nki", "nki.language", "nki.isa", "nki.typing", "nki.collectives")
    for m in names + ("neuronxcc",):
        monkeypatch.delitem(sys.modules, m, raising=False)
    try:
        run.install_import_names()
        import neuronxcc.nki.language as old_nl
        import nki
        import nki.isa

        import torch_neuronx.nki
        import torch_neuronx.nki.legacy.language

        assert nki is torch_neuronx.nki and nki.isa is torch_neuronx.nki.isa
        assert old_nl is torch_neuronx.nki.legacy.language
    finally:  # `nki` names this package only while the runner runs
        for m in names:
            sys.modules.pop(m, None)


def test_a_missing_source_is_recorded_as_other(tmp_path):
    rec = run.run_case(run.CASES[0], str(tmp_path))
    assert rec["outcome"] == "other" and "FileNotFoundError" in rec["detail"]
    md = run.markdown([rec])
    assert "| 1 |" in md and "other: FileNotFoundError" in md
