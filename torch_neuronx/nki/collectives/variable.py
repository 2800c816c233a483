"""The variable-length collectives of ``nki.collectives`` (NKI 2.33): ``all_to_all_v`` and
``all_gather_v``, whose per-rank element counts live in a ``uint32`` metadata tensor read at
execution time.

Tensors are flat element buffers. Metadata: HBM ``(rows, ranks)`` or SBUF ``(1, rows,
ranks)``, rows 3 (``has_rdispls=False``) or 4; columns are positions in the sub-group. Row 0
send counts, row 1 send displacements (``all_gather_v``: only column 0, one chunk sent to
every rank), row 2 receive counts (written by the collective unless ``recv_counts_known``),
row 3 receive displacements (``has_rdispls=True``); without them the chunk from position s
lands at ``s * (dst elements / ranks)``. Source: AWS's pages
https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/nki/api/generated/nki.collectives.all_to_all_v.html
and .../nki.collectives.all_gather_v.html (the stub of aws-neuron/aws-neuron-sdk).

Checked here: the metadata's dtype, shape and buffer; counts and displacements within the
buffers (the hardware validates them "at execution time": here an error naming the rank and
the row); ``all_gather_v``'s documented limits (LNC=2, sub-groups of exactly 4 ranks,
``has_rdispls=False``). Not checked: ``all_to_all_v``'s placement limits (NeuronSwitch
fabric, inter-node rank lists), which depend on the instance's network the emulation does
not place ranks on.
"""

from __future__ import annotations

import torch

from .. import dtypes, execution
from ..errors import NkiUnsupportedError, fail
from ..isa_common import DMA_OK, SBUF, operand, write
from . import meeting as mt


def _metadata(ex, opcode, meta, n, has_rdispls, recv_counts_known):
    operand(ex, opcode, "metadata_tensor", meta, DMA_OK, write=not recv_counts_known)
    if dtypes.name(meta.dtype) != "uint32":
        fail(f"ncc.{opcode}: metadata_tensor must be uint32, got {dtypes.name(meta.dtype)}")
    rows = 4 if has_rdispls else (3, 4)
    shape = tuple(meta.shape)
    body = shape[1:] if meta.buffer is SBUF else shape
    if meta.buffer is SBUF and (len(shape) != 3 or shape[0] != 1):
        body = ()
    if (
        len(body) != 2
        or body[1] != n
        or body[0] not in (rows if isinstance(rows, tuple) else (rows,))
    ):
        want = "4" if has_rdispls else "3 (or 4)"
        lead = "(1, rows, ranks) on one partition" if meta.buffer is SBUF else "(rows, ranks)"
        fail(
            f"ncc.{opcode}: metadata_tensor must be {lead} with rows = {want} and ranks = {n} "
            f"(the sub-group's size), got {shape}"
        )
    return body[0]


def _rows(meta, rows, n):
    return meta.read().reshape(-1)[: rows * n].to(torch.int64).reshape(rows, n).tolist()


def _flat(x):
    return x.read().reshape(-1)


def _common(ex, opcode, srcs, dsts, priority):
    mt.not_in_pair(ex, opcode)
    mt.priority_rule(ex, opcode, priority)
    srcs, dsts = mt.operands(ex, opcode, srcs, dsts, hbm_only=True, single=True)
    return srcs[0], dsts[0]


def _chunk(opcode, rank, flat, count, displ, role):
    if count < 0 or displ < 0 or displ + count > flat.numel():
        fail(
            f"ncc.{opcode}: rank {rank}'s {role} asks for elements [{displ}, {displ + count}) "
            f"of its src, which has {flat.numel()}"
        )
    return flat[displ : displ + count].clone()


def _receive(opcode, rank, d, chunks, displs, slot):
    flat = _flat(d).clone()
    for s, (c, at) in enumerate(zip(chunks, displs, strict=False)):
        if slot is not None and c.numel() > slot:
            fail(
                f"ncc.{opcode}: rank {rank} receives {c.numel()} elements from position {s}, "
                f"more than its slot of {slot} (dst elements / ranks); pass has_rdispls=True "
                f"with receive displacements, or a larger dst"
            )
        if at < 0 or at + c.numel() > flat.numel():
            fail(
                f"ncc.{opcode}: rank {rank} would write elements [{at}, {at + c.numel()}) of "
                f"its dst, which has {flat.numel()}"
            )
        flat[at : at + c.numel()] = c.to(flat.dtype)
    write(d, flat.reshape(d.shape))


def _write_counts(meta, vals, rows, n, counts):
    vals = [list(r) for r in vals]
    vals[2] = list(counts)
    full = _flat(meta).clone()
    full[: rows * n] = torch.tensor([x for r in vals for x in r], dtype=torch.int64).to(full.dtype)
    write(meta, full.reshape(meta.shape))


@mt.guarded
def all_to_all_v(
    srcs,
    dsts,
    replica_group,
    metadata_tensor,
    recv_counts_known=False,
    has_rdispls=False,
    priority=None,
    name=None,
):
    """Rank s sends ``src[send_displs[r] : + send_counts[r]]`` to the rank at position r;
    the chunk from position s lands at ``recv_displs[s]`` (or ``s * dst elements / ranks``)."""
    opcode = "all_to_all_v"
    ex = execution.begin(opcode)
    s, d = _common(ex, opcode, srcs, dsts, priority)
    world, rank, group = mt.group_of(ex, opcode, replica_group)
    n = len(group)
    rows = _metadata(ex, opcode, metadata_tensor, n, has_rdispls, recv_counts_known)
    part = mt.Part(opcode, rank, [], False, (("has_rdispls", bool(has_rdispls)),))
    part.ready = mt.ready_time(ex, [s, metadata_tensor])
    if ex.abstract:
        return
    meta = _rows(metadata_tensor, rows, n)
    flat = _flat(s)
    part.extra = [
        _chunk(opcode, rank, flat, meta[0][r], meta[1][r], f"send row for position {r}")
        for r in range(n)
    ]
    parts = mt.meet(ex, world, rank, group, part)
    me = group.index(rank)
    chunks = [p.extra[me] for p in parts]
    if has_rdispls:
        displs, slot = meta[3], None
    else:
        slot = d.size // n
        displs = [slot * q for q in range(n)]
    _receive(opcode, rank, d, chunks, displs, slot)
    if not recv_counts_known:
        _write_counts(metadata_tensor, meta, rows, n, [c.numel() for c in chunks])
    sent = sum(c.numel() for c in part.extra) * dtypes.itemsize(s.dtype)
    mt.schedule(ex, parts, [d, metadata_tensor], mt.modeled_seconds("all_to_all", sent, group))


@mt.guarded
def all_gather_v(
    srcs,
    dsts,
    replica_group,
    metadata_tensor,
    recv_counts_known=False,
    has_rdispls=False,
    priority=None,
    name=None,
):
    """Each rank broadcasts ``src[send_displ : + send_count]`` (metadata column 0) to every
    rank of the sub-group; the chunk from position s lands at ``s * dst elements / ranks``."""
    opcode = "all_gather_v"
    ex = execution.begin(opcode)
    s, d = _common(ex, opcode, srcs, dsts, priority)
    if has_rdispls:
        fail(
            f"ncc.{opcode}: has_rdispls=True is not supported (AWS's current limitation)",
            NkiUnsupportedError,
        )
    if ex.target.lnc != 2:
        fail(
            f"ncc.{opcode}: only LNC=2 is supported (AWS's current limitation); this core has LNC={ex.target.lnc}"
        )
    world, rank, group = mt.group_of(ex, opcode, replica_group)
    n = len(group)
    if n != 4:
        fail(
            f"ncc.{opcode}: each rank list must have exactly 4 ranks (intra-chip; AWS's current "
            f"limitation), got {list(group)}"
        )
    rows = _metadata(ex, opcode, metadata_tensor, n, False, recv_counts_known)
    part = mt.Part(opcode, rank, [], False, ())
    part.ready = mt.ready_time(ex, [s, metadata_tensor])
    if ex.abstract:
        return
    meta = _rows(metadata_tensor, rows, n)
    part.extra = _chunk(opcode, rank, _flat(s), meta[0][0], meta[1][0], "send row (column 0)")
    parts = mt.meet(ex, world, rank, group, part)
    slot = d.size // n
    chunks = [p.extra for p in parts]
    _receive(opcode, rank, d, chunks, [slot * q for q in range(n)], slot)
    if not recv_counts_known:
        _write_counts(metadata_tensor, meta, rows, n, [c.numel() for c in chunks])
    total = sum(c.numel() for c in chunks) * dtypes.itemsize(s.dtype)
    mt.schedule(ex, parts, [d, metadata_tensor], mt.modeled_seconds("all_gather", total, group))
