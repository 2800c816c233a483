"""Which ops ran natively and which fell back to CPU (TorchNeuron's op tracking API)."""

from torch_neuronx import _C


def get_fallback_ops() -> list[str]:
    """Op names (e.g. "aten::linalg_qr") that ran via CPU fallback since the last clear."""
    return list(_C._fallback_ops())


def get_executed_ops() -> list[str]:
    """Op names that ran natively on the (emulated) NeuronCore since the last clear."""
    return list(_C._executed_ops())


def get_fallback_sources() -> dict[str, list[str]]:
    """Where each CPU-fallback op was called from: op name -> the first distinct
    ``"file.py:42 in fn"`` lines (recorded while TORCH_NEURONX_ENABLE_STACK_TRACE=1)."""
    return {op: list(lines) for op, lines in _C._fallback_sources().items()}


def clear_op_tracking() -> None:
    _C._clear_op_tracking()
    _C._clear_fallback_sources()
