"""Fixtures of the evaluate tests (helpers: evaluate_support.py)."""

from __future__ import annotations

import pytest
from evaluate_support import evaluate


@pytest.fixture(scope="session")
def eval_root(tmp_path_factory):
    return tmp_path_factory.mktemp("evaluate")


@pytest.fixture(scope="session")
def run_eval(eval_root):
    def _run(key, *args, **kw):
        return evaluate(eval_root, key, *args, **kw)

    return _run
