"""Issue 28 item 5: ``torch-neuronx evaluate`` refuses nonsensical numbers before the script
runs, in one line on stderr with exit status 2 (before: ``--fake --fsdp 0`` ran the script and
then raised ZeroDivisionError; ``--steps 0`` imported torch first; a nan tolerance passed every
comparison)."""

from __future__ import annotations

import pytest

from torch_neuronx.tools import cli


@pytest.mark.parametrize(
    "argv, says",
    [
        (["--fake", "--fsdp", "0"], "argument --fsdp: '0' must be >= 1"),
        (["--fake", "--tp", "-2"], "argument --tp: '-2' must be >= 1"),
        (["--steps", "0"], "argument --steps: '0' must be >= 1"),
        (["--steps", "many"], "argument --steps: 'many' is not a whole number"),
        (["--samples-per-step", "0"], "argument --samples-per-step: '0' must be >= 1"),
        (["--tokens-per-step", "1.5"], "argument --tokens-per-step: '1.5' is not a whole number"),
        (["--tolerance", "loss=nan"], "a tolerance is a finite number >= 0"),
        (["--tolerance", "grad_norm=-1"], "a tolerance is a finite number >= 0"),
        (["--price", "trn2.3xlarge=-3"], "malformed price"),
    ],
)
def test_nonsensical_numbers_are_refused_before_the_script_runs(tmp_path, capsys, argv, says):
    ran = tmp_path / "ran"
    script = tmp_path / "script.py"
    script.write_text(f"open({str(ran)!r}, 'w').close()\n")
    try:
        rc = cli.main(["evaluate", "--quiet", "--out", str(tmp_path / "out"), *argv, str(script)])
    except SystemExit as e:  # argparse's own checks exit
        rc = e.code
    err = capsys.readouterr().err
    assert rc == 2 and says in err, err
    assert err.startswith("torch-neuronx evaluate: error: ") and err.count("\n") == 1, err
    assert not ran.exists() and not (tmp_path / "out").exists()
