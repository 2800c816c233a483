"""Which samples run: seeded sample generation and the CI / full plans."""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import zlib
from typing import Any

import numpy
import torch

from torch_neuronx.runtime import env

from .categories import WIDE_CATEGORIES, category_dtypes
from .checks import quiet
from .database import op_key
from .layouts import LAYOUT_NAMES


def _stable_hash(*parts) -> int:
    return zlib.crc32("|".join(str(p) for p in parts).encode())


@contextlib.contextmanager
def no_test_fn_tracking():
    """OpInfo's sample iterators crawl the Python stack (``inspect.stack()``) on every
    call looking for a unittest TestCase to record the current sample on; under pytest
    that dominates the run time. The harness has no TestCase, so the crawl is pointless:
    short-circuit it while samples are generated."""
    from torch.testing._internal import common_utils
    from torch.testing._internal.opinfo import core

    saved = (common_utils.extract_test_fn, core.extract_test_fn)
    common_utils.extract_test_fn = core.extract_test_fn = lambda: None
    try:
        yield
    finally:
        common_utils.extract_test_fn, core.extract_test_fn = saved


def seed_host(seed: int = 0) -> None:
    """Seed the CPU generator (and Python's / NumPy's) without ``torch.manual_seed``,
    which also seeds every accelerator module and is slow (lazy-init bookkeeping)."""
    import random

    torch.random.default_generator.manual_seed(seed)
    random.seed(seed)
    numpy.random.seed(seed)  # some OpInfo sample generators draw from NumPy


def generate_samples(op, dtype, requires_grad: bool, limit: int | None = None):
    """Deterministic list of CPU samples (seeded once, generated in order, so sample
    ``i`` is the same whatever ``limit`` is). ``limit`` caps how many are generated (the
    sample generators are lazy, so this also caps the cost)."""
    seed_host(0)
    with quiet(), no_test_fn_tracking():
        gen = op.sample_inputs("cpu", dtype, requires_grad=requires_grad, set_seed=False)
        return list(itertools.islice(gen, limit) if limit is not None else gen)


@dataclasses.dataclass(frozen=True)
class Plan:
    """How much of each OpInfo one run covers."""

    full: bool
    # CI sample: per (op, category), the first ``pool`` samples are generated and
    # ``take`` of them, picked by a stable hash, are run.
    pool: int = 24
    take: int = 6
    # The 64-bit categories (float64, complex128, grad64) repeat the float32 code paths with
    # another dtype: CI runs ``take_wide`` of the first ``pool_wide`` samples.
    pool_wide: int = 6
    take_wide: int = 2
    int_dtypes_per_op: int = 3
    # Memory layouts (layouts.py): in CI, layout variants run for the categories of
    # ``layout_categories`` only, for the (op, category, layout) triples whose stable hash is
    # 0 modulo ``layout_every``, on the first ``layout_take`` picked samples. Full: every
    # category, layout and sample.
    layout_categories: tuple[str, ...] = ("float32", "grad")
    layout_every: int = 5
    layout_take: int = 2

    def dtypes(self, op, category: str) -> list:
        dts = category_dtypes(op, category)
        if self.full or category != "integer" or len(dts) <= self.int_dtypes_per_op:
            return dts
        start = _stable_hash(op_key(op), "int") % len(dts)
        return [dts[(start + i) % len(dts)] for i in range(self.int_dtypes_per_op)]

    def pick(self, op, category: str, dtype, samples: list) -> list[tuple[int, Any]]:
        idx = list(enumerate(samples))
        take = self.take_wide if category in WIDE_CATEGORIES else self.take
        if self.full or len(idx) <= take:
            return idx
        order = sorted(idx, key=lambda p: _stable_hash(op_key(op), category, dtype, p[0]))
        chosen = sorted(order[:take], key=lambda p: p[0])
        return chosen

    def layouts(self, op, category: str) -> list[str]:
        """The layouts each picked sample of (op, category) is also run in."""
        if self.full:
            return list(LAYOUT_NAMES)
        if category not in self.layout_categories:
            return []
        return [
            name
            for name in LAYOUT_NAMES
            if _stable_hash(op_key(op), category, name) % self.layout_every == 0
        ]

    def layout_samples(self, picked: list) -> list:
        """Of the picked (index, sample) pairs, those that also run in other layouts."""
        return picked if self.full else picked[: self.layout_take]


FULL_PLAN = Plan(full=True)
CI_PLAN = Plan(full=False)


def plan_from_env() -> Plan:
    return FULL_PLAN if env.flag("TORCH_NEURONX_TEST_FULL") else CI_PLAN
