"""The Vector Engine's top-8 family, the building blocks of top-k kernels: ``max8`` (the 8
largest values of each partition), ``nc_find_index8`` (their positions) and
``nc_match_replace8`` (overwrite them, to find the next 8).

Values are compared in float32 (the engine converts its inputs). All 8 values of a partition
are matched at once with one ``(P, 8, N)`` comparison, so duplicates are paired with distinct
positions exactly as AWS's pages describe, without a loop over the 8 slots.
"""

from __future__ import annotations

import torch

from ...runtime.engines import Engine
from .. import dtypes, execution
from ..errors import fail
from ..isa_common import ON_CHIP, f32, operand, record, same_free, same_partitions, write

_MIN_N, _MAX_N = 8, 16384  # elements read per partition (AWS: "between 8 and 16,384")
_INDEX_DTYPES = (torch.uint16, torch.uint32)


def _rank(opcode, role, x, max_rank):
    if x.ndim > max_rank:
        fail(
            f"nisa.{opcode}: {role} has {x.ndim} dims (shape {x.shape}); at most {max_rank} "
            f"(partition dim included) are supported"
        )


def _searched(opcode, role, x):
    if not _MIN_N <= x.free_size <= _MAX_N:
        fail(
            f"nisa.{opcode}: {role} has {x.free_size} elements per partition (shape {x.shape}); "
            f"the instruction reads between {_MIN_N} and {_MAX_N}"
        )


def _eight(opcode, role, x):
    if x.free_size != 8:
        fail(
            f"nisa.{opcode}: {role} must hold exactly 8 elements per partition, got shape {x.shape}"
        )


def max8(dst, src, name=None):
    """The 8 largest values of each partition of ``src``, in descending order (Vector Engine)."""
    ex = execution.begin("max8")
    operand(ex, "max8", "src", src, ON_CHIP)
    operand(ex, "max8", "dst", dst, ON_CHIP, write=True)
    same_partitions("max8", "dst", dst, "src", src)
    _rank("max8", "src", src, 5)
    _rank("max8", "dst", dst, 3)
    _searched("max8", "src", src)
    _eight("max8", "dst", dst)
    record(ex, Engine.vector, src)
    if ex.compute:
        v = f32(src).reshape(src.partitions, -1)
        write(dst, v.topk(8, dim=1, largest=True, sorted=True).values)


def _index_dst(opcode, role, x):
    if x.dtype not in _INDEX_DTYPES:
        fail(f"nisa.{opcode}: {role} must be uint16 or uint32, got {dtypes.name(x.dtype)}")
    _eight(opcode, role, x)


def _pair(data, vals, later: bool):
    """For each of the 8 slots, the position in ``data`` (P, N) its value is paired with, and
    whether one exists: slot s of value v takes the (r+1)-th occurrence of v in data, r being
    the number of other slots of value v before s (``later``: after s)."""
    P, N = data.shape
    same = vals.unsqueeze(2) == vals.unsqueeze(1)  # (P, 8, 8): slot s, slot j equal
    order = torch.ones(8, 8, dtype=torch.bool)
    order = order.triu(1) if later else order.tril(-1)  # j after s / j before s
    rank = (same & order).sum(dim=2, dtype=torch.int16)  # (P, 8)
    eq = data.unsqueeze(1) == vals.unsqueeze(2)  # (P, 8, N)
    nth = eq.cumsum(dim=2, dtype=torch.int16)
    hit = eq & (nth == (rank + 1).unsqueeze(2))
    found = hit.any(dim=2)
    pos = hit.to(torch.uint8).argmax(dim=2)
    return pos, found


def _sentinel(dtype):
    return 0xFFFF if dtype is torch.uint16 else 0xFFFFFFFF


def nc_find_index8(dst, data, vals, name=None):
    """The positions (from 0) in each partition of ``data`` of the 8 values in ``vals``; a
    value not present gives the all-ones sentinel (Vector Engine)."""
    ex = execution.begin("nc_find_index8")
    opc = "nc_find_index8"
    operand(ex, opc, "data", data, ON_CHIP)
    operand(ex, opc, "vals", vals, ON_CHIP)
    operand(ex, opc, "dst", dst, ON_CHIP, write=True)
    same_partitions(opc, "dst", dst, "data", data)
    same_partitions(opc, "vals", vals, "data", data)
    _rank(opc, "data", data, 3)
    _rank(opc, "vals", vals, 3)
    _searched(opc, "data", data)
    _eight(opc, "vals", vals)
    _index_dst(opc, "dst", dst)
    record(ex, Engine.vector, data)
    if ex.compute:
        P = data.partitions
        pos, found = _pair(f32(data).reshape(P, -1), f32(vals).reshape(P, 8), later=False)
        out = torch.where(found, pos, torch.full_like(pos, _sentinel(dst.dtype)))
        write(dst, out)


def nc_match_replace8(dst, data, vals, imm, dst_idx=None, name=None):
    """``data`` with the first occurrence of each of the 8 ``vals`` of a partition replaced by
    ``imm``; their positions go to ``dst_idx`` when given (Vector Engine). Duplicated values
    are matched from slot 7 down, so the first occurrence lands in the highest slot."""
    ex = execution.begin("nc_match_replace8")
    opc = "nc_match_replace8"
    operand(ex, opc, "data", data, ON_CHIP)
    operand(ex, opc, "vals", vals, ON_CHIP)
    operand(ex, opc, "dst", dst, ON_CHIP, write=True)
    same_partitions(opc, "dst", dst, "data", data)
    same_free(opc, "dst", dst, "data", data)
    same_partitions(opc, "vals", vals, "data", data)
    _searched(opc, "data", data)
    _eight(opc, "vals", vals)
    if not isinstance(imm, (int, float)) or isinstance(imm, bool):
        fail(f"nisa.{opc}: imm must be a compile-time float, got {imm!r}")
    if dst_idx is not None:
        operand(ex, opc, "dst_idx", dst_idx, ON_CHIP, write=True)
        same_partitions(opc, "dst_idx", dst_idx, "data", data)
        _index_dst(opc, "dst_idx", dst_idx)
    record(ex, Engine.vector, data)
    if ex.compute:
        P = data.partitions
        d = f32(data).reshape(P, -1)
        pos, found = _pair(d, f32(vals).reshape(P, 8), later=True)
        # add, not assign: a slot that found nothing must not clear another slot's match
        hit = torch.zeros(d.shape, dtype=torch.int16).scatter_add_(1, pos, found.to(torch.int16))
        hit = hit > 0
        write(dst, torch.where(hit, torch.tensor(float(imm)), d))
        if dst_idx is not None:
            # AWS leaves unmatched slots unspecified; the simulator writes find_index8's sentinel
            s = _sentinel(dst_idx.dtype)
            write(dst_idx, torch.where(found, pos, torch.full_like(pos, s)))
