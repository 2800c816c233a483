"""What the fuzzer works with: statements and programs, the statement kinds, the input
dtypes, and the failures and reports a run gives."""

from __future__ import annotations

import dataclasses
import re
from collections import Counter

import torch

APPROX_RTOL = 1e-4
APPROX_ATOL = 1e-5

FLOATS = (torch.float32, torch.float16, torch.bfloat16, torch.float64)
INTS = (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8)
INPUT_DTYPES = (
    (torch.float32, 6),
    (torch.int64, 3),
    (torch.float64, 2),
    (torch.int32, 2),
    (torch.bool, 1),
    (torch.float16, 1),
    (torch.bfloat16, 1),
    (torch.int16, 1),
    (torch.int8, 1),
    (torch.uint8, 1),
    (torch.complex64, 1),
    (torch.complex128, 1),
)
WIDE = (torch.float64, torch.complex128)  # arithmetic runs in 32 bits by policy

# Memory layouts an input is drawn in (torch_neuronx/testing/layouts.py), with weights: about
# half the inputs are plain contiguous tensors, the rest channels_last, permuted, at a storage
# offset, strided slices of a larger tensor, or expanded (stride 0: the first slice repeated).
INPUT_LAYOUTS = (
    ("contiguous", 5),
    ("channels_last", 1),
    ("permuted", 1),
    ("offset", 1),
    ("sliced", 1),
    ("expanded", 1),
)
# What a program's statements may call beside `torch` and `dev` (the layout helpers).
LAYOUT_HELPERS = "from torch_neuronx.testing.layouts import apply_layout, to_device_keeping_layout"


def namespace(device: str) -> dict:
    """The globals a program runs in on `device`."""
    from torch_neuronx.testing.layouts import apply_layout, to_device_keeping_layout

    return {
        "torch": torch,
        "dev": device,
        "apply_layout": apply_layout,
        "to_device_keeping_layout": to_device_keeping_layout,
    }


KINDS = (
    "input",
    "view",
    "transpose",
    "slice",
    "inplace",
    "reduction",
    "indexing",
    "index_put",
    "conversion",
    "broadcast",
    "out",
    "cat",
    "matmul",
    "error",
)


@dataclasses.dataclass
class Statement:
    kind: str
    code: str


@dataclasses.dataclass
class Program:
    seed: int
    statements: list[Statement]
    approx: set[str]  # names whose data may come from 64-bit arithmetic (compared with tolerance)


@dataclasses.dataclass
class Failure:
    program: Program
    message: str


@dataclasses.dataclass
class Report:
    programs: int = 0
    statements: int = 0
    kinds: Counter = dataclasses.field(default_factory=Counter)
    layouts: Counter = dataclasses.field(default_factory=Counter)  # inputs per layout
    failures: list[Failure] = dataclasses.field(default_factory=list)

    def summary(self) -> str:
        kinds = ", ".join(f"{k} {self.kinds[k]}" for k in KINDS if self.kinds[k])
        layouts = ", ".join(f"{k} {n}" for k, n in sorted(self.layouts.items()))
        return (
            f"{self.programs} programs, {self.statements} statements ({kinds}); "
            f"inputs by layout: {layouts}; {len(self.failures)} failing"
        )


def input_layout(st: Statement) -> str | None:
    """The memory layout an input statement draws (None for other statements)."""
    if st.kind != "input":
        return None
    m = re.search(r"apply_layout\(.*, '(\w+)'\)", st.code)
    return m.group(1) if m else "contiguous"


def storage_of(t: torch.Tensor) -> int:
    """The identity of the storage a tensor views (aliasing checks)."""
    return t.untyped_storage().data_ptr()
