"""The dtype categories a sweep runs (float32, grad, bfloat16, integer and the 64-bit ones)
and the dtypes of each that an OpInfo supports on CPU."""

from __future__ import annotations

import torch

FLOAT32 = torch.float32
BFLOAT16 = torch.bfloat16
INT_DTYPES = (torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)
WIDE_DTYPES = (torch.float64, torch.complex128)

# The 64-bit categories: float64 and complex128 (functional, in-place and out= variants) and
# their gradients (``grad64``). Dtype and shape must equal CPU's; values are held to float32
# tolerances (the NeuronCore computes 64-bit floats in float32).
WIDE_CATEGORIES = ("float64", "complex128", "grad64")
CATEGORIES = ("float32", "grad", "bfloat16", "integer") + WIDE_CATEGORIES


def cpu_dtypes(op) -> set:
    try:
        return set(op.supported_dtypes("cpu"))
    except Exception:
        return set()


def cpu_backward_dtypes(op) -> set:
    if not op.supports_autograd:
        return set()
    try:
        return set(op.supported_backward_dtypes("cpu"))
    except Exception:
        return set()


def category_dtypes(op, category: str) -> list:
    d = cpu_dtypes(op)
    if category == "float32":
        return [FLOAT32] if FLOAT32 in d else []
    if category == "bfloat16":
        return [BFLOAT16] if BFLOAT16 in d else []
    if category == "grad":
        return [FLOAT32] if FLOAT32 in cpu_backward_dtypes(op) else []
    if category == "integer":
        return [dt for dt in INT_DTYPES if dt in d]
    if category in ("float64", "complex128"):
        dt = getattr(torch, category)
        return [dt] if dt in d else []
    if category == "grad64":
        return [dt for dt in WIDE_DTYPES if dt in cpu_backward_dtypes(op)]
    raise ValueError(category)
