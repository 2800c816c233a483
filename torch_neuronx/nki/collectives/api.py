"""The fixed-size collectives of ``nki.collectives`` (NKI 2.33): ``all_reduce``,
``all_gather``, ``reduce_scatter``, ``all_to_all``, ``collective_permute``,
``collective_permute_implicit``, ``collective_permute_implicit_reduce``, and the rank ids
``rank_id`` / ``collective_permute_implicit_current_processing_rank_id``.

Signatures and rules from AWS's pages (Neuron 2.33), e.g.
https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/nki/api/generated/nki.collectives.all_reduce.html
and the stub ``nki/api/nki/collectives/__init__.py`` of aws-neuron/aws-neuron-sdk.
Reductions are computed in float32 (integers in int64) and rounded once to the
destination's dtype.
"""

from __future__ import annotations

import torch

from .. import dtypes, execution
from ..errors import fail
from ..isa.registers import VirtualRegister
from ..isa_common import DMA_OK, SBUF, operand, write
from . import meeting as mt


def _begin(opcode, priority=None):
    ex = execution.begin(opcode)
    mt.not_in_pair(ex, opcode)
    mt.priority_rule(ex, opcode, priority)
    return ex


def _reduce(values, op: str) -> torch.Tensor:
    v = values[0]
    wide = torch.float32 if v.is_floating_point() else torch.int64
    stack = torch.stack([x.to(wide) for x in values])
    if op == "add":
        return stack.sum(0)
    return stack.amin(0) if op == "minimum" else stack.amax(0)


def _same_elements(opcode, i, s, d):
    if s.buffer is SBUF:
        ok = s.partitions == d.partitions and s.free_size == d.free_size
    else:
        ok = s.size == d.size
    if not ok:
        fail(
            f"ncc.{opcode}: srcs[{i}] {s.shape} and dsts[{i}] {d.shape} must hold the same elements"
        )


def _dim(opcode, collective_dim, allowed):
    if isinstance(collective_dim, bool) or collective_dim not in allowed:
        fail(
            f"ncc.{opcode}: collective_dim must be {' or '.join(map(str, allowed))} here, got "
            f"{collective_dim!r}"
        )
    return collective_dim


def _scaled(opcode, i, small, big, dim, n, small_role, big_role):
    want = list(small.shape)
    want[dim] *= n
    if list(big.shape) != want:
        fail(
            f"ncc.{opcode}: with {n} ranks and collective_dim={dim}, {big_role}[{i}] must have "
            f"shape {tuple(want)} ({small_role}[{i}] is {small.shape}), got {big.shape}"
        )


# ---------------------------------------------------------------- reductions and gathers
@mt.guarded
def all_reduce(srcs, dsts, replica_group, op, priority=None, name=None):
    """Every rank of the sub-group gets ``op`` (nl.add / nl.minimum / nl.maximum) over the
    sub-group's ``srcs``, element by element, in its ``dsts``."""
    ex = _begin("all_reduce", priority)
    srcs, dsts = mt.operands(ex, "all_reduce", srcs, dsts)
    opn = mt.reduce_op("all_reduce", op)
    for i, (s, d) in enumerate(zip(srcs, dsts, strict=False)):
        _same_elements("all_reduce", i, s, d)
    world, rank, group = mt.group_of(ex, "all_reduce", replica_group)
    part = mt.Part("all_reduce", rank, srcs, ex.compute, (("op", opn),), mt.ready_time(ex, srcs))
    if ex.abstract:
        return
    parts = mt.meet(ex, world, rank, group, part)
    for i, d in enumerate(dsts):
        write(d, _reduce([p.values[i] for p in parts], opn).reshape(d.shape))
    mt.schedule(ex, parts, dsts, mt.modeled_seconds("all_reduce", mt.nbytes(srcs), group))


@mt.guarded
def all_gather(srcs, dsts, replica_group, collective_dim, priority=None, name=None):
    """Every rank gets the sub-group's ``srcs`` concatenated along ``collective_dim`` in
    sub-group order (0 for HBM tensors; 0 or 1 for 2-D SBUF tiles)."""
    ex = _begin("all_gather", priority)
    srcs, dsts = mt.operands(ex, "all_gather", srcs, dsts)
    sbuf = srcs[0].buffer is SBUF
    dim = _dim("all_gather", collective_dim, (0, 1) if sbuf else (0,))
    world, rank, group = mt.group_of(ex, "all_gather", replica_group)
    n = len(group)
    for i, (s, d) in enumerate(zip(srcs, dsts, strict=False)):
        if sbuf and (s.ndim != 2 or d.ndim != 2):
            fail("ncc.all_gather: SBUF collectives take 2-D tiles (partitions, one free dim)")
        _scaled("all_gather", i, s, d, dim, n, "srcs", "dsts")
    part = mt.Part("all_gather", rank, srcs, ex.compute, (("collective_dim", dim),))
    part.ready = mt.ready_time(ex, srcs)
    if ex.abstract:
        return
    parts = mt.meet(ex, world, rank, group, part)
    for i, d in enumerate(dsts):
        write(d, torch.cat([p.values[i] for p in parts], dim))
    mt.schedule(ex, parts, dsts, mt.modeled_seconds("all_gather", mt.nbytes(dsts), group))


@mt.guarded
def reduce_scatter(srcs, dsts, replica_group, collective_dim, op, priority=None, name=None):
    """``op`` over the sub-group's ``srcs``, split along dim 0 into one chunk per rank: the
    rank at position i of the sub-group gets chunk i."""
    ex = _begin("reduce_scatter", priority)
    srcs, dsts = mt.operands(ex, "reduce_scatter", srcs, dsts)
    dim = _dim("reduce_scatter", collective_dim, (0,))
    opn = mt.reduce_op("reduce_scatter", op)
    world, rank, group = mt.group_of(ex, "reduce_scatter", replica_group)
    n = len(group)
    for i, (s, d) in enumerate(zip(srcs, dsts, strict=False)):
        _scaled("reduce_scatter", i, d, s, dim, n, "dsts", "srcs")
    args = (("op", opn), ("collective_dim", dim))
    part = mt.Part("reduce_scatter", rank, srcs, ex.compute, args, mt.ready_time(ex, srcs))
    if ex.abstract:
        return
    parts = mt.meet(ex, world, rank, group, part)
    me = group.index(rank)
    for i, d in enumerate(dsts):
        full = _reduce([p.values[i] for p in parts], opn)
        write(d, full.chunk(n, dim)[me])
    mt.schedule(ex, parts, dsts, mt.modeled_seconds("reduce_scatter", mt.nbytes(srcs), group))


@mt.guarded
def all_to_all(srcs, dsts, replica_group, collective_dim, priority=None, name=None):
    """Each rank splits its ``srcs`` along dim 0 into one chunk per rank and sends chunk j to
    the rank at position j; its ``dsts`` are the chunks it receives, in sub-group order
    (HBM only)."""
    ex = _begin("all_to_all", priority)
    srcs, dsts = mt.operands(ex, "all_to_all", srcs, dsts, hbm_only=True)
    dim = _dim("all_to_all", collective_dim, (0,))
    world, rank, group = mt.group_of(ex, "all_to_all", replica_group)
    n = len(group)
    for i, (s, d) in enumerate(zip(srcs, dsts, strict=False)):
        if s.shape != d.shape or s.shape[0] % n:
            fail(
                f"ncc.all_to_all: srcs[{i}] {s.shape} and dsts[{i}] {d.shape} must have the "
                f"same shape, with dim 0 a multiple of the {n} ranks"
            )
    part = mt.Part("all_to_all", rank, srcs, ex.compute, (("collective_dim", dim),))
    part.ready = mt.ready_time(ex, srcs)
    if ex.abstract:
        return
    parts = mt.meet(ex, world, rank, group, part)
    me = group.index(rank)
    for i, d in enumerate(dsts):
        write(d, torch.cat([p.values[i].chunk(n, 0)[me] for p in parts], 0))
    mt.schedule(ex, parts, dsts, mt.modeled_seconds("all_to_all", mt.nbytes(srcs), group))


# ---------------------------------------------------------------- permutes
@mt.guarded
def collective_permute(srcs, dsts, source_target_pairs, priority=None, name=None):
    """For each ``(source, target)`` pair, ``srcs[0]`` of rank ``source`` lands in
    ``dsts[0]`` of rank ``target``; a rank that is no pair's target keeps its ``dsts``.
    Every rank of the launch issues it (HBM, one tensor each)."""
    ex = _begin("collective_permute", priority)
    srcs, dsts = mt.operands(ex, "collective_permute", srcs, dsts, hbm_only=True, single=True)
    pairs = _pairs(source_target_pairs)
    named = [r for p in pairs for r in p]
    world, rank, group = mt.world_group(ex, "collective_permute", named)
    bad = [r for r in named if r >= len(group)]
    if bad and not ex.abstract:
        fail(
            f"ncc.collective_permute: pairs name ranks {bad}; this launch has ranks 0..{len(group) - 1}"
        )
    s, d = srcs[0], dsts[0]
    _same_elements("collective_permute", 0, s, d)
    part = mt.Part("collective_permute", rank, srcs, ex.compute, (("pairs", pairs),))
    part.ready = mt.ready_time(ex, srcs)
    if ex.abstract:
        return
    parts = mt.meet(ex, world, rank, group, part)
    src_of = [a for a, b in pairs if b == rank]
    if src_of:
        write(d, parts[group.index(src_of[0])].values[0].reshape(d.shape))
    peers = [b for a, b in pairs if a == rank and b != rank]
    secs = max(
        (mt.modeled_seconds("send", mt.nbytes(srcs), (rank,), peer=b) for b in peers), default=0.0
    )
    mt.schedule(ex, parts, dsts if src_of else [], secs)


def _pairs(source_target_pairs):
    try:
        pairs = tuple((int(a), int(b)) for a, b in source_target_pairs)
    except (TypeError, ValueError):
        fail(
            f"ncc.collective_permute: source_target_pairs must be a list of (source, target) "
            f"rank pairs, got {source_target_pairs!r}"
        )
    targets = [b for _, b in pairs]
    dup = sorted({b for b in targets if targets.count(b) > 1})
    if dup:
        fail(
            f"ncc.collective_permute: ranks {dup} are the target of several pairs; each rank "
            f"receives from at most one source"
        )
    sources = [a for a, _ in pairs]
    dup = sorted({a for a in sources if sources.count(a) > 1})
    if dup:
        fail(
            f"ncc.collective_permute: ranks {dup} are the source of several pairs; a rank "
            f"sends its one src to at most one target"
        )
    return pairs


def _channels(ex, opcode, lists, channel_ids, roles):
    """The per-channel tensor lists: one tensor per channel, ``channel_ids`` = 0..n-1, at most
    4 channels (all the instance's cores in the group) or 2 (other groups) [AWS's page]."""
    out = []
    for role, xs in zip(roles, lists, strict=False):
        xs = mt.tensor_list(opcode, role, xs)
        for c, inner in enumerate(xs):
            inner = mt.tensor_list(opcode, f"{role}[{c}]", inner)
            if len(inner) != 1:
                fail(
                    f"ncc.{opcode}: {role}[{c}] holds {len(inner)} tensors; coalesced "
                    f"communication is not supported, give exactly one per channel"
                )
        out.append([inner[0] for inner in xs])
    if len({len(x) for x in out}) > 1:
        fail(f"ncc.{opcode}: {', '.join(roles)} must have one entry per channel each")
    ids = list(channel_ids)
    if ids != list(range(len(ids))) or len(ids) != len(out[0]):
        fail(
            f"ncc.{opcode}: channel_ids must be consecutive from 0, one per channel "
            f"({len(out[0])} channels), got {channel_ids!r}"
        )
    return out


def _max_channels(group) -> int:
    from torch_neuronx.runtime import topology

    every_core = topology.current().target.cores_per_instance
    return 4 if len(group) >= every_core else 2


def _ring(ex, opcode, lists, channel_ids, replica_group, roles, reduce=None, priority=None):
    world, rank, group = mt.group_of(ex, opcode, replica_group)
    chans = _channels(ex, opcode, lists, channel_ids, roles)
    limit = _max_channels(group)
    if len(chans[0]) > limit:
        fail(
            f"ncc.{opcode}: {len(chans[0])} channels; at most {limit} for the sub-group "
            f"{list(group)} (4 only when it holds every core of the instance)"
        )
    *src_lists, dsts = chans
    for role, xs in zip(roles, chans, strict=False):
        for c, x in enumerate(xs):
            operand(ex, opcode, f"{role}[{c}][0]", x, DMA_OK, write=role == roles[-1])
    if len({x.buffer is SBUF for xs in chans for x in xs}) > 1:
        fail(f"ncc.{opcode}: the tensors must all be in HBM or all in SBUF, not a mix")
    for c, d in enumerate(dsts):
        for s in (xs[c] for xs in src_lists):
            _same_elements(opcode, c, s, d)
            if dtypes.normalize(s.dtype) != dtypes.normalize(d.dtype):
                fail(
                    f"ncc.{opcode}: channel {c}'s src is {dtypes.name(s.dtype)} and its dst "
                    f"{dtypes.name(d.dtype)}; a collective does not convert: use the same dtype"
                )
    srcs = [x for xs in src_lists for x in xs]
    args = (("channels", len(dsts)),) + ((("op", reduce),) if reduce else ())
    part = mt.Part(opcode, rank, srcs, ex.compute, args, mt.ready_time(ex, srcs))
    if ex.abstract:
        return
    parts = mt.meet(ex, world, rank, group, part)
    n, me = len(group), group.index(rank)
    pred = parts[(me - 1) % n]
    k = len(dsts)
    for c, d in enumerate(dsts):
        if reduce:
            v = _reduce([pred.values[c], pred.values[k + c]], reduce)
        else:
            v = pred.values[c]
        write(d, v.reshape(d.shape))
    succ = group[(me + 1) % n]
    secs = 0.0
    if succ != rank:
        secs = max(mt.modeled_seconds("send", mt.nbytes([d]), (rank,), peer=succ) for d in dsts)
    mt.schedule(ex, parts, dsts, secs)


@mt.guarded
def collective_permute_implicit(
    srcs_by_channel, dsts_by_channel, replica_group, channel_ids=(0,), priority=None, name=None
):
    """On each channel, every rank sends its src to its successor in the sub-group's ring
    (the next rank of the list, the last to the first) and receives its predecessor's."""
    ex = _begin("collective_permute_implicit", priority)
    _ring(
        ex,
        "collective_permute_implicit",
        (srcs_by_channel, dsts_by_channel),
        channel_ids,
        replica_group,
        ("srcs_by_channel", "dsts_by_channel"),
    )


@mt.guarded
def collective_permute_implicit_reduce(
    srcs0_by_channel,
    srcs1_by_channel,
    dsts_by_channel,
    replica_group,
    op,
    channel_ids=(0,),
    priority=None,
    name=None,
):
    """``collective_permute_implicit`` of ``op(srcs0, srcs1)``: each rank receives its ring
    predecessor's reduced pair on each channel."""
    ex = _begin("collective_permute_implicit_reduce", priority)
    opn = mt.reduce_op("collective_permute_implicit_reduce", op)
    _ring(
        ex,
        "collective_permute_implicit_reduce",
        (srcs0_by_channel, srcs1_by_channel, dsts_by_channel),
        channel_ids,
        replica_group,
        ("srcs0_by_channel", "srcs1_by_channel", "dsts_by_channel"),
        reduce=opn,
    )


# ---------------------------------------------------------------- rank ids
def rank_id(name=None) -> VirtualRegister:
    """This rank's id, in a register (``run_ranks``: the index of the rank's arguments)."""
    execution.current()
    return VirtualRegister(mt.current()[1])


def collective_permute_implicit_current_processing_rank_id(
    iteration_id, replica_group, channel_id=0, name=None
) -> VirtualRegister:
    """The rank whose data a ring step processes: this rank at iteration 0, then its
    predecessor, the one before, ... around the sub-group's ring (in a register)."""
    ex = execution.current()
    opcode = "collective_permute_implicit_current_processing_rank_id"
    if isinstance(iteration_id, VirtualRegister):
        iteration_id = iteration_id.get(f"ncc.{opcode}: iteration_id")
    if isinstance(iteration_id, bool) or not hasattr(iteration_id, "__index__"):
        fail(f"ncc.{opcode}: iteration_id must be an integer or a register, got {iteration_id!r}")
    if isinstance(channel_id, bool) or channel_id not in range(4):
        fail(f"ncc.{opcode}: channel_id must be 0..3, got {channel_id!r}")
    world, rank, group = mt.group_of(ex, opcode, replica_group)
    if iteration_id is None:  # shapes-only run: a loaded value is unknown
        return VirtualRegister(rank)
    n = len(group)
    return VirtualRegister(group[(group.index(rank) - int(iteration_id)) % n])
