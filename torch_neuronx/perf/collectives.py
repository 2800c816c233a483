"""Collectives: an alpha-beta model over the instance's topology.

Ranks are placed on logical cores in order (rank r on core r of the job, as torchrun does with
one process per core): cores of a chip, then the chips of an instance, then instances. A group
spans up to three **levels**, each with a per-hop latency alpha and a per-node bandwidth B:

=========================  =====================================  ==================================
level                      bandwidth per node                     hop latency
=========================  =====================================  ==================================
cores of one chip          the logical core's DMA bandwidth       ``on_chip_latency`` (assumption)
chips of one instance      NeuronLink per chip / 2 (*)            1.5 us [INTRA]
instances                  EFA of the chips used (UltraServer:    15 us [COLL, INTER]
                           NeuronLink between instances / 2)      (UltraServer: 1.5 us)
=========================  =====================================  ==================================

(*) ASSUMPTION: the published per-chip NeuronLink figures count both directions, so one
direction gets half; the model has no link contention and no topology detail (torus vs switch).

Algorithms (p ranks per level, n bytes per node; every level's nodes carry the whole vector in
a hierarchical collective, so n is the same at each level):

- ring reduce-scatter / all-gather, per level: (p - 1) alpha + (p - 1) / p * n / B;
- all_reduce: ring = reduce-scatter + all-gather over every level (hierarchical);
  tree = 2 sum(ceil(log2 p) alpha) + 2 sum(n / B) (binary trees, level after level like the
  ring: fewer hops, but no (p - 1) / p saving); the model takes the faster
  (``params.collective_algorithms``), as NCCL-style libraries do: the tree for small messages,
  the ring for large ones;
- broadcast / reduce: pipelined tree, sum(ceil(log2 p) alpha) + n / min(B);
- all_to_all: (p - 1) alpha at the top level + at each level, the share of a node's data that
  leaves it, (p - 1) / p * n * ranks-per-node / B;
- send / recv: one hop of the level that separates the two ranks + n / B;
- barrier: a tree all_reduce of nothing.

**The default is the measured model** (``params.collective_model = "measured"``): the alpha-beta
model above predicts collectives 9-15x faster than AWS's published nccom-test runs, which show a
fixed cost of microseconds to hundreds of microseconds and a bus bandwidth far below the link
peaks. The measured model charges fixed(L) + factor(op, p) * n / busbw(L) for the widest level L
the group spans, with the constants fitted to those runs (``hardware.COLLECTIVE_FIT``,
``perf/collective_fit.py``, ``perf/collective_data.py``); where a level has its own fit for
reductions (``"<level>:reduce"``: all-reduce, reduce-scatter, reduce), those ops use it. nccom-test times NEFFs of collective
instructions, so that is the in-graph cost; an eager collective adds one eager launch.

Under ``collective_model="peak"`` each collective also pays one eager launch (``params.eager_launch_s``; a kernel's overhead
inside a compiled graph). The reduction
arithmetic (VectorE) is not charged: it overlaps the transfers.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from torch_neuronx.runtime.engines import Engine

from . import events as ev
from . import params as _params
from .target import Target

_ALIASES = {
    "allreduce": "all_reduce",
    "all_reduce_coalesced": "all_reduce",
    "allgather": "all_gather",
    "_allgather_base": "all_gather",
    "all_gather_into_tensor": "all_gather",
    "allgather_into_tensor_coalesced": "all_gather",
    "all_gather_into_tensor_coalesced": "all_gather",
    "reduce_scatter_tensor": "reduce_scatter",
    "_reduce_scatter_base": "reduce_scatter",
    "reduce_scatter_tensor_coalesced": "reduce_scatter",
    "alltoall": "all_to_all",
    "alltoall_base": "all_to_all",
    "all_to_all_single": "all_to_all",
    "allgather_coalesced": "all_gather",
    "isend": "send",
    "irecv": "recv",
}


@dataclasses.dataclass(frozen=True)
class Level:
    name: str
    size: int  # ranks (nodes) of the group at this level
    bandwidth: float  # bytes/s per node, one direction
    latency: float  # seconds per hop
    ranks_per_node: int


def levels(ranks: Sequence[int], target: Target) -> list[Level]:
    """The levels a group of global ranks spans, bottom up (only those with > 1 node)."""
    cpc = target.cores_per_chip
    cpi = target.cores_per_instance
    chip = target.core.chip
    inst = target.instance
    places = [(r // cpi, (r % cpi) // cpc) for r in ranks]
    instances = sorted({i for i, _ in places})
    chips_of = {i: sorted({c for j, c in places if j == i}) for i in instances}
    cores_of: dict = {}
    for i, c in places:
        cores_of[(i, c)] = cores_of.get((i, c), 0) + 1
    p_core = max(cores_of.values())
    p_chip = max(len(v) for v in chips_of.values())
    p_inst = len(instances)
    out: list[Level] = []
    if p_core > 1:
        out.append(
            Level("cores of a chip", p_core, target.core.dma_bw, float(chip.on_chip_latency), 1)
        )
    if p_chip > 1:
        out.append(
            Level(
                "chips of an instance",
                p_chip,
                float(chip.neuronlink_bw) / 2,
                float(chip.neuronlink_latency),
                p_core,
            )
        )
    if p_inst > 1:
        if inst.scaleup_link_bw_per_chip is not None and p_inst <= inst.scaleup_max_instances:
            bw = float(inst.scaleup_link_bw_per_chip) / 2 * p_chip
            out.append(
                Level(
                    "instances (UltraServer NeuronLink)",
                    p_inst,
                    bw,
                    float(chip.neuronlink_latency),
                    p_core * p_chip,
                )
            )
        else:
            bw = min(float(chip.efa_bw_per_chip) * p_chip, float(inst.efa_bw))
            out.append(
                Level("instances (EFA)", p_inst, bw, float(chip.efa_latency), p_core * p_chip)
            )
    return out


def _ring_phase(lv: Level, n: float) -> float:
    return (lv.size - 1) * lv.latency + (lv.size - 1) / lv.size * n / lv.bandwidth


def _log2(p: int) -> int:
    return math.ceil(math.log2(p)) if p > 1 else 0


def algorithm_times(op: str, n: float, lv: list[Level]) -> dict:
    """{algorithm: seconds} for one collective over levels ``lv`` (n bytes per node)."""
    if not lv:
        return {"local": 0.0}
    bmin = min(x.bandwidth for x in lv)
    tree_lat = sum(_log2(x.size) * x.latency for x in lv)
    if op == "all_reduce":
        return {
            "ring": 2 * sum(_ring_phase(x, n) for x in lv),
            "tree": 2 * tree_lat + 2 * sum(n / x.bandwidth for x in lv),
        }
    if op in ("all_gather", "reduce_scatter", "gather", "scatter"):
        return {"ring": sum(_ring_phase(x, n) for x in lv)}
    if op in ("broadcast", "reduce"):
        return {"tree": tree_lat + n / bmin}
    if op == "all_to_all":
        return {
            "pairwise": (lv[-1].size - 1) * lv[-1].latency
            + sum((x.size - 1) / x.size * n * x.ranks_per_node / x.bandwidth for x in lv)
        }
    if op in ("send", "recv"):
        top = lv[-1]
        return {"p2p": top.latency + n / top.bandwidth}
    if op == "barrier":
        return {"tree": 2 * tree_lat}
    raise ValueError(f"torch_neuronx.perf: no model for collective {op!r}")


_group_ranks: dict = {}


def group_ranks(group_name: str, size: int = 2) -> list:
    """Global ranks of the process group named ``group_name`` (cached); ranks 0..size-1 when
    the name is not a registered group."""
    ranks = _group_ranks.get(group_name)
    if ranks is None:
        try:
            import torch.distributed as dist
            from torch.distributed.distributed_c10d import _resolve_process_group

            ranks = dist.get_process_group_ranks(_resolve_process_group(group_name))
        except Exception:  # noqa: BLE001 - not initialised / unknown group
            return list(range(size))
        _group_ranks[group_name] = ranks
    return ranks


def normalize(op: str) -> str:
    op = op.lower()
    return _ALIASES.get(op, op)


def collective_cost(
    op: str,
    nbytes: float,
    ranks: Sequence[int],
    target: Target,
    peer: int | None = None,
    in_graph: bool = False,
) -> ev.Cost:
    """Modeled cost of one collective. ``nbytes``: the tensor's size for all_reduce /
    broadcast / reduce / send / recv / all_to_all (per rank); the full (gathered / unscattered)
    size for all_gather / reduce_scatter / gather / scatter. ``ranks``: the group's global
    ranks; for send/recv, ``ranks`` is (self, peer). ``in_graph``: part of a compiled graph
    (pays a kernel's overhead instead of an eager launch)."""
    op = normalize(op)
    p = _params.current()
    group = list(ranks) if peer is None else [ranks[0], peer]
    lv = levels(group, target)
    if p.collective_model == "measured":
        return _measured_cost(op, float(nbytes), group, lv, target, in_graph, p)
    times = algorithm_times(op, float(nbytes), lv)
    allowed = {k: v for k, v in times.items() if k in p.collective_algorithms or len(times) == 1}
    algo, body = min((allowed or times).items(), key=lambda kv: kv[1])
    overhead = p.kernel_overhead_s if in_graph else p.eager_launch_s
    detail = f"{algo} over " + (", ".join(f"{x.name} x{x.size}" for x in lv) if lv else "one rank")
    return ev.Cost(
        kind=ev.COLLECTIVE,
        name=op,
        engine=Engine.collective,
        duration=body + overhead,
        bytes=float(nbytes),
        overhead_s=overhead,
        bound="network" if body > overhead else "launch",
        shapes=f"{len(group)} ranks",
        detail=detail,
        busy=((Engine.collective, body),),
        basis=(op, float(nbytes), tuple(group), in_graph),
    )


# The measured model's vocabulary, shared with its fit (perf/collective_fit.py imports it).
#: the level key of each level name in ``collectives.levels``
LEVEL_KEY = {
    "cores of a chip": "core",
    "chips of an instance": "chip",
    "instances (EFA)": "instance",
    "instances (UltraServer NeuronLink)": "ultraserver",
}


def bus_factor(op: str, p: int) -> float:
    """nccom-test's algbw -> busbw factor: the share of the data each rank must move."""
    if p <= 1:
        return 0.0
    if op == "all_reduce":
        return 2.0 * (p - 1) / p
    if op in ("all_gather", "reduce_scatter", "gather", "scatter", "all_to_all"):
        return (p - 1) / p
    if op == "barrier":
        return 0.0
    return 1.0  # send / recv / broadcast / reduce: the whole buffer crosses one link


#: reductions: the collective adds what it receives before passing it on (on Trn2 a small
#: all-reduce's fixed cost is ~15x a small all-gather's in the published runs)
_REDUCING = ("all_reduce", "reduce_scatter", "reduce")


def op_class(op: str) -> str:
    """ "reduce" for reductions, "move" for pure data movement (the measured model's classes)."""
    return "reduce" if normalize(op) in _REDUCING else "move"


def measured_body(op: str, n: float, p: int, lv: list, target: Target) -> tuple:
    """(seconds, level key) of one collective under the measured model (no launch)."""
    from torch_neuronx.runtime.hardware import COLLECTIVE_FIT

    if not lv:
        return 0.0, "local"
    if op not in ("send", "recv", "barrier") and op not in _MEASURED_OPS:
        raise ValueError(f"torch_neuronx.perf: no model for collective {op!r}")
    key = LEVEL_KEY[lv[-1].name]
    fits = COLLECTIVE_FIT[target.generation]
    if op_class(op) == "reduce" and key + ":reduce" in fits:
        key += ":reduce"
    fixed, busbw = fits[key]
    return float(fixed) + bus_factor(op, p) * n / float(busbw), key


_MEASURED_OPS = (
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "gather",
    "scatter",
    "broadcast",
    "reduce",
    "all_to_all",
)


def _measured_cost(op, n, group, lv, target, in_graph, p) -> ev.Cost:
    # send/recv: the pair is the group; every other op: all its ranks
    body, key = measured_body(op, n, len(group), lv, target)
    # nccom-test's times are in-graph and include the kernel; eager adds one launch
    overhead = 0.0 if in_graph else p.eager_launch_s
    detail = f"measured fit ({key} level, modeled) over " + (
        ", ".join(f"{x.name} x{x.size}" for x in lv) if lv else "one rank"
    )
    return ev.Cost(
        kind=ev.COLLECTIVE,
        name=op,
        engine=Engine.collective,
        duration=body + overhead,
        bytes=n,
        overhead_s=overhead,
        bound="network" if body > overhead else "launch",
        shapes=f"{len(group)} ranks",
        detail=detail,
        busy=((Engine.collective, body),),
        basis=(op, n, tuple(group), in_graph),
    )
