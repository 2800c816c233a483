"""Batch-norm statistics: ``bn_stats`` and ``bn_aggr``."""

from __future__ import annotations

import torch

from ...runtime.engines import Engine
from .. import execution
from ..errors import fail
from ..isa_common import ON_CHIP, f32, operand, record, same_partitions, write


def bn_stats(dst, data, name=None):
    """Per-partition (count, mean, variance*count) of the even and odd elements (6 values)."""
    ex = execution.begin("bn_stats")
    operand(ex, "bn_stats", "data", data, ON_CHIP)
    operand(ex, "bn_stats", "dst", dst, ON_CHIP, write=True)
    same_partitions("bn_stats", "dst", dst, "data", data)
    if data.free_size > ex.target.bn_stats_fmax:
        fail(
            f"nisa.bn_stats: data has {data.free_size} elements per partition, more than "
            f"{ex.target.bn_stats_fmax} (nl.tile_size.bn_stats_fmax); split the free dim and "
            f"aggregate with bn_aggr"
        )
    if dst.free_size != 6:
        fail(f"nisa.bn_stats: dst must hold 6 values per partition, has {dst.free_size}")
    record(ex, Engine.vector, data)
    if ex.compute:
        x = f32(data).reshape(data.partitions, -1)
        outs = []
        for part in (x[:, 0::2], x[:, 1::2]):
            n = part.shape[1]
            mean = part.mean(dim=1) if n else torch.zeros(x.shape[0])
            m2 = ((part - mean[:, None]) ** 2).sum(dim=1) if n else torch.zeros(x.shape[0])
            outs += [torch.full_like(mean, float(n)), mean, m2]
        write(dst, torch.stack(outs, dim=1))


def bn_aggr(dst, data, name=None):
    """Combine ``bn_stats`` triples into a per-partition mean and variance."""
    ex = execution.begin("bn_aggr")
    operand(ex, "bn_aggr", "data", data, ON_CHIP)
    operand(ex, "bn_aggr", "dst", dst, ON_CHIP, write=True)
    same_partitions("bn_aggr", "dst", dst, "data", data)
    if data.free_size % 3:
        fail(
            f"nisa.bn_aggr: data must hold (count, mean, variance*count) triples; "
            f"{data.free_size} values per partition is not a multiple of 3"
        )
    if dst.free_size != 2:
        fail("nisa.bn_aggr: dst must hold 2 values (mean, variance) per partition")
    record(ex, Engine.vector, data)
    if ex.compute:
        t = f32(data).reshape(data.partitions, -1, 3)
        n, mean, m2 = t[..., 0], t[..., 1], t[..., 2]
        total = n.sum(dim=1)
        mu = (n * mean).sum(dim=1) / total
        var = (m2 + n * (mean - mu[:, None]) ** 2).sum(dim=1) / total
        write(dst, torch.stack([mu, var], dim=1))
