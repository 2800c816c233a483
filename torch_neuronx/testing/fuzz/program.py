"""What the fuzzer works with: statements and programs, the statement kinds, the input
dtypes, and the failures and reports a run gives."""

from __future__ import annotations

import dataclasses
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
    failures: list[Failure] = dataclasses.field(default_factory=list)

    def summary(self) -> str:
        kinds = ", ".join(f"{k} {self.kinds[k]}" for k in KINDS if self.kinds[k])
        return (
            f"{self.programs} programs, {self.statements} statements ({kinds}); "
            f"{len(self.failures)} failing"
        )


def storage_of(t: torch.Tensor) -> int:
    """The identity of the storage a tensor views (aliasing checks)."""
    return t.untyped_storage().data_ptr()
