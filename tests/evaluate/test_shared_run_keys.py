"""tests/conftest.py runs the evaluate files that share a run (the same key of
evaluate_support's cache) as one xdist unit and every other evaluate file as a unit of its own.
A key used by two files outside that group would then be run twice (once per worker), and a
test reading another file's run would find it missing when the files land on different
workers: this test names such a key and the files to add to ``_SHARED_RUN_FILES``."""

from __future__ import annotations

import ast
from pathlib import Path

HERE = Path(__file__).parent
CONFTEST = HERE.parent / "conftest.py"


def _shared_run_files() -> set[str]:
    for node in ast.walk(ast.parse(CONFTEST.read_text())):
        if isinstance(node, ast.Assign) and any(
            getattr(t, "id", None) == "_SHARED_RUN_FILES" for t in node.targets
        ):
            return {Path(e.value).name for e in node.value.elts}
    raise AssertionError(f"no _SHARED_RUN_FILES in {CONFTEST}")


def _keys(path: Path) -> set[str]:
    """The run keys a test file uses: first arguments of ``run_eval(...)`` (an f-string as its
    source text) and the keys of a module-level ``REPORTS`` table (test_presentation.py)."""
    keys = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "run_eval":
            if node.args:
                a = node.args[0]
                keys.add(a.value if isinstance(a, ast.Constant) else ast.unparse(a))
        if isinstance(node, ast.Assign) and any(
            getattr(t, "id", None) == "REPORTS" for t in node.targets
        ):
            keys |= {k.value for k in node.value.keys if isinstance(k, ast.Constant)}
    return keys


def test_files_sharing_a_run_are_one_unit():
    by_key: dict[str, set[str]] = {}
    for path in sorted(HERE.glob("test_*.py")):
        for key in _keys(path):
            by_key.setdefault(key, set()).add(path.name)
    assert "tinygpt_eager" in by_key  # the parse finds keys at all
    group = _shared_run_files()
    apart = {k: sorted(f) for k, f in by_key.items() if len(f) > 1 and not f <= group}
    assert not apart, f"keys shared outside tests/conftest.py's _SHARED_RUN_FILES: {apart}"
