"""PyTorch's OpInfo and module databases (``op_db``, ``module_db``), loaded on first use,
and the device under test (``TORCH_NEURONX_OPINFO_DEVICE``)."""

from __future__ import annotations

import sys
import types
import unittest
import warnings

from torch_neuronx.runtime import env


def _ensure_expecttest() -> None:
    """``torch.testing._internal.common_utils`` imports ``expecttest`` (a test-only
    dependency that the torch wheel does not pull in). The harness uses none of it;
    when it is missing, a minimal stand-in keeps ``op_db`` importable."""
    try:
        import expecttest  # noqa: F401
    except ImportError:
        mod = types.ModuleType("expecttest")

        class TestCase(unittest.TestCase):  # pragma: no cover - trivial stand-in
            def assertExpectedInline(self, *args, **kwargs):
                raise unittest.SkipTest("expecttest not installed")

        mod.TestCase = TestCase
        sys.modules["expecttest"] = mod


_OP_DB = None


def load_op_db():
    global _OP_DB
    if _OP_DB is None:
        _ensure_expecttest()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from torch.testing._internal.common_methods_invocations import op_db

        _OP_DB = list(op_db)
    return _OP_DB


def op_key(op) -> str:
    """Unique, stable name of an OpInfo: ``name`` or ``name.variant``."""
    variant = getattr(op, "variant_test_name", "")
    return f"{op.name}.{variant}" if variant else op.name


def ops_by_key() -> dict:
    return {op_key(op): op for op in load_op_db()}


def device_under_test() -> str:
    """``neuron`` (importing this package loaded the driver), or the device that
    ``TORCH_NEURONX_OPINFO_DEVICE`` names (``cpu``: the harness self-check)."""
    return env.text("TORCH_NEURONX_OPINFO_DEVICE", "neuron")


MODULE_NAMES = (
    "nn.RNN",
    "nn.LSTM",
    "nn.GRU",
    "nn.RNNCell",
    "nn.LSTMCell",
    "nn.GRUCell",
    "nn.MultiheadAttention",
    "nn.TransformerEncoderLayer",
    "nn.TransformerDecoderLayer",
)


def load_module_db() -> list:
    load_op_db()  # expecttest stand-in
    from torch.testing._internal.common_modules import module_db

    return [m for m in module_db if m.name in MODULE_NAMES]
