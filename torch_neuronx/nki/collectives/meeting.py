"""Where the ranks of a collective meet: who takes part, the exchange of the sources, and the
collective's place on each rank's modeled schedule.

Each rank's collective call leaves a :class:`Part` (its sources as they are at the call,
their shapes and its arguments) at the meeting of its sub-group, keyed by the sub-group,
the SPMD program (``kernel[2]``: program k of every rank meets program k) and how many
collectives that program has issued to that sub-group so far; it then waits (nki/ranks.py)
until every rank of the sub-group has left its part, and computes its own destinations from
all parts. So each rank writes only its own tensors, in its own launch.

Cost: one collective instruction on the CC-Cores, timed by the project's collective model
(``torch_neuronx.perf.collectives.collective_cost``, in-graph: no eager launch; ranks placed
on logical cores in rank order), labelled modeled like every kernel time. It starts when the
last rank of the sub-group has issued it and its sources are written (the latest of the
ranks' ready times), and its destinations are ready when it ends.
"""

from __future__ import annotations

import functools

from torch_neuronx.runtime.engines import Engine

from .. import dtypes, execution, ranks
from ..errors import NkiError, NkiUnsupportedError, fail
from ..isa_common import DMA_OK, HBM, SBUF, operand
from . import processes
from .groups import ReplicaGroup


class Part:
    """One rank's contribution to a collective."""

    __slots__ = ("opcode", "rank", "values", "shapes", "dtypes", "args", "ready", "extra")

    def __init__(self, opcode, rank, srcs, compute, args=(), ready=0.0, extra=None):
        self.opcode = opcode
        self.rank = rank
        self.values = [s.read().clone() for s in srcs] if compute else None
        self.shapes = [tuple(s.shape) for s in srcs]
        self.dtypes = [dtypes.name(s.dtype) for s in srcs]
        self.args = args  # what must agree across the ranks (op, collective_dim, ...)
        self.ready = ready
        self.extra = extra  # per-opcode data (variable-length chunks)


def current():
    """(world, rank): the ranks of ``run_ranks``, else those of a ``torch.distributed`` job
    (nki/collectives/processes.py), else (None, 0): a single rank."""
    world, rank = ranks.current()
    if world is None:
        job = processes.current()
        if job is not None:
            return job
    return world, rank


def guarded(fn):
    """A collective call: under a ``torch.distributed`` job, a rule broken before the exchange
    still takes part in it (with the error), so the other processes do not wait forever."""

    @functools.wraps(fn)
    def call(*args, **kwargs):
        processes.begin_call()
        try:
            return fn(*args, **kwargs)
        except NkiError as e:
            ex = execution.current_or_none()
            if ex is not None and not ex.abstract:  # shapes-only runs exchange nothing
                processes.abandon(str(e))
            raise

    return call


def group_of(ex, opcode: str, replica_group):
    """(world, rank, sub-group) for a collective over ``replica_group``."""
    if not isinstance(replica_group, ReplicaGroup):
        fail(
            f"ncc.{opcode}: replica_group must be an nki.collectives.ReplicaGroup "
            f"(e.g. ReplicaGroup([[0, 1]])), got {type(replica_group).__name__}"
        )
    world, rank = current()
    g = replica_group.group_of(rank)
    if g is None:
        fail(
            f"ncc.{opcode}: this is rank {rank}, which is in no sub-group of {replica_group!r}; "
            f"every rank that issues the collective must be in one"
        )
    return world, rank, _check_ranks(ex, opcode, world, g)


def world_group(ex, opcode: str, named):
    """(world, rank, every rank of the launch) for the collectives without a replica group."""
    world, rank = current()
    size = world.size if world is not None else 1
    if not ex.abstract and world is None and any(r != 0 for r in named):
        _one_rank(opcode, sorted(set(named) - {0}))
    return world, rank, tuple(range(size))


def _check_ranks(ex, opcode, world, g):
    size = world.size if world is not None else 1
    bad = [r for r in g if r >= size]
    if bad and not ex.abstract:
        if world is None:
            _one_rank(opcode, bad)
        fail(
            f"ncc.{opcode}: the sub-group {list(g)} names ranks {bad}, but this launch has "
            f"ranks 0..{size - 1}"
        )
    return g


def _one_rank(opcode, bad):
    fail(
        f"ncc.{opcode} names ranks {bad}, but this launch is a single rank (rank 0). A "
        f"collective kernel runs once per rank: launch the ranks together with "
        f"torch_neuronx.nki.collectives.run_ranks(kernel, [args of rank 0, args of rank 1, ...])",
        NkiUnsupportedError,
    )


def not_in_pair(ex, opcode):
    if ex.lockstep is not None:
        fail(
            f"ncc.{opcode} in a kernel whose LNC pair exchanges data with sendrecv/core_barrier "
            f"is not simulated (the pair runs as coroutines of its own); issue the collective "
            f"from a kernel without sendrecv/core_barrier",
            NkiUnsupportedError,
        )


def meet(ex, world, rank, group: tuple, part: Part) -> list:
    """Leave ``part`` at the sub-group's meeting and wait for the others: every rank's part,
    in sub-group order. A rank issuing another collective there is an error."""
    if isinstance(world, processes.ProcessWorld):
        return _check(part, rank, group, _across_processes(world, rank, group, part), 0)
    if world is None or len(group) == 1:
        return [part]
    prog = ex.program_ids
    seq = world.sequence(rank, prog, group)
    key = (group, prog, seq)
    parts = world.meetings.setdefault(key, {})
    parts[rank] = part
    what = f"ncc.{part.opcode} (collective {seq + 1} of sub-group {list(group)})"
    world.wait_until(rank, lambda: len(parts) == len(group), what, fail)
    out = [parts[r] for r in group]
    read = world.meetings.setdefault(key + ("read",), set())
    read.add(rank)
    if len(read) == len(group):
        world.meetings.pop(key, None)
        world.meetings.pop(key + ("read",), None)
    return _check(part, rank, group, out, seq)


def _across_processes(world, rank, group, part) -> list:
    got = world.exchange(("part", part))
    for r, (kind, p) in enumerate(got):
        if kind == "error":
            fail(
                f"ncc.{part.opcode}: rank {r} of the job failed at this collective:\n  {p}",
                NkiError,
            )
    return [got[r][1] for r in group]


def _check(part, rank, group, out, seq) -> list:
    for p in out:
        if p.opcode != part.opcode:
            fail(
                f"ncc.{part.opcode}: rank {p.rank} of sub-group {list(group)} issues "
                f"ncc.{p.opcode} as its collective {seq + 1} there; every rank must issue the "
                f"same collectives in the same order"
            )
        if p.args != part.args:
            fail(
                f"ncc.{part.opcode}: rank {p.rank} issues it with {_fmt(p.args)}, this rank "
                f"(rank {rank}) with {_fmt(part.args)}; they must agree"
            )
        if p.shapes != part.shapes or p.dtypes != part.dtypes:
            fail(
                f"ncc.{part.opcode}: rank {p.rank}'s sources are {_fmt_t(p)}, this rank's "
                f"(rank {rank}) {_fmt_t(part)}; every rank of the sub-group must pass the "
                f"same shapes and dtypes"
            )
    return out


def _fmt(args) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in args) or "no arguments"


def _fmt_t(p) -> str:
    return ", ".join(f"{s} {d}" for s, d in zip(p.shapes, p.dtypes, strict=False))


# ---------------------------------------------------------------- operands
def tensor_list(opcode: str, role: str, xs) -> list:
    if not isinstance(xs, (list, tuple)):
        fail(
            f"ncc.{opcode}: {role} must be a list of tensors ({role}=[t]), got {type(xs).__name__}"
        )
    if not xs:
        fail(f"ncc.{opcode}: {role} is empty")
    return list(xs)


def operands(ex, opcode, srcs, dsts, hbm_only=False, single=False):
    """The buffer rules shared by the collectives [nki.collectives.all_reduce ...]: SBUF or
    HBM, not a mix; more than one tensor (coalesced) only on HBM; within the sources, and
    within the destinations, private and shared HBM are not mixed."""
    srcs = tensor_list(opcode, "srcs", srcs)
    dsts = tensor_list(opcode, "dsts", dsts)
    if len(srcs) != len(dsts):
        fail(f"ncc.{opcode}: {len(srcs)} srcs but {len(dsts)} dsts; give one dst per src")
    allowed = HBM if hbm_only else DMA_OK
    for i, s in enumerate(srcs):
        operand(ex, opcode, f"srcs[{i}]", s, allowed)
    for i, d in enumerate(dsts):
        operand(ex, opcode, f"dsts[{i}]", d, allowed, write=True)
    on_sbuf = {x.buffer is SBUF for x in srcs + dsts}
    if len(on_sbuf) > 1:
        fail(f"ncc.{opcode}: the tensors must all be in HBM or all in SBUF, not a mix")
    if single and len(srcs) > 1:
        fail(
            f"ncc.{opcode}: coalesced communication (several tensors) is not supported; pass "
            f"exactly one src and one dst"
        )
    if len(srcs) > 1 and SBUF in {x.buffer for x in srcs}:
        fail(
            f"ncc.{opcode}: coalesced communication ({len(srcs)} tensors) is supported only "
            f"for HBM tensors"
        )
    for role, xs in (("srcs", srcs), ("dsts", dsts)):
        if len({x.buffer for x in xs}) > 1:
            fail(
                f"ncc.{opcode}: {role} mixes private and shared HBM; they must be all "
                f"nl.private_hbm or all nl.shared_hbm"
            )
    for i, (s, d) in enumerate(zip(srcs, dsts, strict=False)):
        if dtypes.normalize(s.dtype) != dtypes.normalize(d.dtype):
            fail(
                f"ncc.{opcode}: srcs[{i}] is {dtypes.name(s.dtype)} and dsts[{i}] "
                f"{dtypes.name(d.dtype)}; a collective does not convert: use the same dtype"
            )
    return srcs, dsts


def priority_rule(ex, opcode, priority):
    if priority is None:
        return
    if isinstance(priority, bool) or not isinstance(priority, int) or not 0 <= priority <= 3:
        fail(f"ncc.{opcode}: priority is a DMA QoS level 0..3, got {priority!r}")
    if ex.target.nc_version < 4:
        fail(f"ncc.{opcode}: priority is NeuronCore-v4+ only (Trn3); this is {ex.target.core_name}")


_REDUCE_OPS = ("add", "minimum", "maximum")


def reduce_op(opcode, op) -> str:
    from ..ops import Op

    if isinstance(op, Op) and op.name in _REDUCE_OPS:
        return op.name
    fail(f"ncc.{opcode}: op must be nl.add, nl.minimum or nl.maximum, got {op!r}")


# ---------------------------------------------------------------- cost
def ready_time(ex, srcs) -> float:
    tl = ex.timeline
    if tl is None:
        return 0.0
    t = tl.free[tl.core_index].get(Engine.collective, 0.0)
    for s in srcs:
        t = max(t, s.storage.ready)
    return t


def schedule(ex, parts, dsts, seconds: float):
    """Count the instruction; on the modeled schedule it starts when every rank has issued it
    and ends ``seconds`` later (the collective model's time)."""
    st = ex.stats
    st.instructions[Engine.collective] = st.instructions.get(Engine.collective, 0) + 1
    tl = ex.timeline
    if tl is None:
        return
    start = max(p.ready for p in parts)
    end = start + seconds
    tl.free[tl.core_index][Engine.collective] = end
    tl.busy[Engine.collective] = tl.busy.get(Engine.collective, 0.0) + seconds
    writes = [d.storage for d in dsts]
    for s in writes:
        s.ready = max(s.ready, end)
    tl.end = max(tl.end, end)
    tl.last_end = end
    tl.last_issue = (tl.core_index, Engine.collective, start, end, end, writes)


def modeled_seconds(op: str, nbytes: float, group, peer=None) -> float:
    """The project's collective model (measured fit by default), in-graph (no eager launch)."""
    if len(group) <= 1 and peer is None:
        return 0.0
    from torch_neuronx.perf import collectives as pc
    from torch_neuronx.perf import target as pt

    ranks_ = list(group) if peer is None else [group[0]]
    return pc.collective_cost(op, nbytes, ranks_, pt.current(), peer=peer, in_graph=True).duration


def nbytes(xs) -> int:
    return sum(x.size * dtypes.itemsize(x.dtype) for x in xs)
