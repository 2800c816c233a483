"""GpSimd instructions that turn data into positions: ``nonzero_with_count`` (indices of the
nonzero elements and their count, NeuronCore-v3+) and ``sequence_bounds`` (the [start, end)
of the run of equal segment IDs each element belongs to).

AWS pages: https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/nki/api/generated/nki.isa.nonzero_with_count.html,
https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/nki/api/generated/nki.isa.sequence_bounds.html
"""

from __future__ import annotations

import torch

from ...runtime.engines import Engine
from .. import dtypes, execution
from ..errors import fail
from ..isa_common import SBUF_ONLY, operand, record, same_partitions, write

_GROUP = 16  # partitions per GpSimd core; nonzero_with_count uses each core's first one
_I32 = (-(1 << 31), (1 << 31) - 1)


def _int32_arg(opc, role, v):
    if not isinstance(v, int) or isinstance(v, bool) or not _I32[0] <= v <= _I32[1]:
        fail(f"nisa.{opc}: {role} must be an int32 value, got {v!r}")


def nonzero_with_count(dst, src, index_offset=0, padding_val=-1, name=None):
    """On partitions 0, 16, ..., 112 (each GpSimd core's first): the indices (plus
    ``index_offset``) of ``src``'s nonzero elements in order, then ``padding_val``, then the
    count in the extra last element of ``dst``; other partitions of ``dst`` are untouched."""
    ex = execution.begin("nonzero_with_count")
    opc = "nonzero_with_count"
    if ex.target.nc_version < 3:
        fail(f"nisa.{opc} needs NeuronCore-v3 or newer (Trn2, Trn3); this is {ex.target.label}")
    operand(ex, opc, "src", src, SBUF_ONLY)
    operand(ex, opc, "dst", dst, SBUF_ONLY, write=True)
    same_partitions(opc, "dst", dst, "src", src)
    if dtypes.normalize(src.dtype) not in (torch.float32, torch.int32):
        fail(f"nisa.{opc}: src must be float32 or int32, got {dtypes.name(src.dtype)}")
    if dst.dtype is not torch.int32:
        fail(f"nisa.{opc}: dst must be int32, got {dtypes.name(dst.dtype)}")
    if dst.free_size != src.free_size + 1:
        fail(
            f"nisa.{opc}: dst must have one more element per partition than src (the count): "
            f"{src.free_size + 1}, got {dst.free_size} (shape {dst.shape})"
        )
    _int32_arg(opc, "index_offset", index_offset)
    _int32_arg(opc, "padding_val", padding_val)
    record(ex, Engine.gpsimd, src)
    if ex.compute:
        P, T = src.partitions, src.free_size
        rows = torch.arange(0, P, _GROUP)
        x = src.read().reshape(P, T)[rows]
        nz = x != 0
        count = nz.sum(dim=1, keepdim=True)
        # a stable sort on "is zero" brings the nonzero positions first, in order
        pos = torch.sort((~nz).to(torch.int8), dim=1, stable=True).indices
        out = torch.where(torch.arange(T) < count, pos + index_offset, padding_val)
        full = torch.zeros(P, T + 1, dtype=torch.int64)
        full[rows] = torch.cat([out, count], dim=1)
        mask = torch.zeros(P, T + 1, dtype=torch.bool)
        mask[rows] = True
        write(dst, full.to(torch.int32), mask.reshape(dst.shape))


def sequence_bounds(dst, segment_ids, name=None):
    """For each element of a one-partition tile of segment IDs, the start index and the end
    index (exclusive) of the run of equal IDs it is in: ``dst[0, 0, j]`` and ``dst[0, 1, j]``.
    Padding (ID 0) gets start ``n`` and end ``-1``."""
    ex = execution.begin("sequence_bounds")
    opc = "sequence_bounds"
    operand(ex, opc, "segment_ids", segment_ids, SBUF_ONLY)
    operand(ex, opc, "dst", dst, SBUF_ONLY, write=True)
    for role, t in (("segment_ids", segment_ids), ("dst", dst)):
        if dtypes.normalize(t.dtype) not in (torch.float32, torch.int32):
            fail(f"nisa.{opc}: {role} must be float32 or int32, got {dtypes.name(t.dtype)}")
        if t.partitions != 1:
            fail(f"nisa.{opc}: {role} must have 1 partition, got shape {t.shape}")
    n = segment_ids.free_size
    if tuple(dst.shape) != (1, 2, n):
        fail(
            f"nisa.{opc}: dst must have shape (1, 2, {n}) (start and end of each of the {n} "
            f"segment IDs), got {dst.shape}"
        )
    record(ex, Engine.gpsimd, segment_ids)
    if ex.compute:
        s = segment_ids.read().reshape(n)
        if bool((s < 0).any()):
            fail(f"nisa.{opc}: segment IDs must be non-negative")
        j = torch.arange(n)
        new = torch.ones(n, dtype=torch.bool)  # element j starts a run
        new[1:] = s[1:] != s[:-1]
        last = torch.ones(n, dtype=torch.bool)  # element j ends a run
        last[:-1] = s[:-1] != s[1:]
        start = torch.where(new, j, 0).cummax(0).values
        # end: the first run end at or after j, + 1 (a reversed running minimum)
        end = torch.where(last, j + 1, n).flip(0).cummin(0).values.flip(0)
        pad = s == 0
        out = torch.stack([torch.where(pad, n, start), torch.where(pad, -1, end)])
        write(dst, out.reshape(1, 2, n).to(dtypes.storage_dtype(dst.dtype)))
