"""What the model produces: a :class:`Cost` per piece of device work, an :class:`Event` per
recorded cost on a device's modeled timeline, and :class:`Work`, the target-independent
description of a kernel that a cost is computed from.

Every duration here is **modeled** Trainium time in seconds, never a wall time of this host
(except ``Cost.host_s`` of a CPU-fallback op, which is the measured host kernel time and is
named as such)."""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

from torch_neuronx.runtime.engines import Engine

#: kinds of device work
OP, KERNEL, GRAPH, COLLECTIVE, COPY, FALLBACK = (
    "op",
    "kernel",
    "graph",
    "collective",
    "copy",
    "fallback",
)
#: engines (where the time is spent): torch_neuronx.runtime.engines.Engine, whose values
#: ("tensor", "vector", ...) are the names in costs, events and reports


@dataclasses.dataclass(frozen=True)
class Work:
    """A kernel's work, independent of the hardware generation.

    ``elem_work``: (engine, elements, tensor inputs, element bits) for element-wise work;
    ``mm_dims``: (batch, M, K, N) of each matmul (TensorE tile rule); ``contractions``:
    (share of FLOPs, contraction length) for TensorE work without clean GEMM dims
    (attention, convolution)."""

    name: str
    kind: str  # OP (eager) or KERNEL (inside a compiled graph)
    engine: Engine  # the engine that runs it (tensor, vector, scalar, gpsimd, dma)
    flops: float = 0.0
    bytes: float = 0.0
    dtype: str = "fp32"  # dtype class: bf16 | fp8 | mxfp8 | fp32
    mm_dims: tuple = ()
    contractions: tuple = ()
    elem_work: tuple = ()
    ops: tuple = ()  # member ops of a fused kernel
    shapes: str = ""
    group: str = ""  # a collective inside a compiled graph: its process group's name
    # a fused kernel: bytes of intermediates live on chip between consecutive member ops
    # (perf/graph.py); what exceeds the core's SBUF spills through HBM (roofline.spill_bytes)
    live: tuple = ()
    # a fused kernel: (first boundary, last boundary + 1, bytes, reads) of each intermediate
    # counted in ``live``: what spills is written once and read back once per reading member,
    # never once per boundary it stays live across (roofline.spill_bytes)
    spans: tuple = ()
    # a fused kernel: HBM bytes its member ops move when run as separate kernels; the compiler
    # splits a kernel rather than spill more than that (roofline.spill_bytes)
    unfused_bytes: float = 0.0


@dataclasses.dataclass(frozen=True)
class Cost:
    """The modeled cost of one piece of device work."""

    kind: str
    name: str
    engine: Engine  # where the time is spent (a plain str from older recordings compares equal)
    duration: float  # modeled seconds on the device timeline
    flops: float = 0.0
    bytes: float = 0.0  # bytes through HBM (ops, kernels) or over the link (copies, collectives)
    compute_s: float = 0.0
    memory_s: float = 0.0
    overhead_s: float = 0.0
    bound: str = ""  # compute | memory | launch | network | link | host
    dtype: str = ""
    shapes: str = ""
    detail: str = ""
    busy: tuple = ()  # ((engine, seconds), ...) engine busy time within `duration`
    host_s: float = 0.0  # measured host kernel time (CPU-fallback ops only)
    #: what the cost was computed from -- a :class:`Work` (ops, kernels) or the arguments of the
    #: collective / copy / fallback cost function -- so that :mod:`.recost` can cost the same
    #: piece of work on another target; None for costs built elsewhere (NKI kernels)
    basis: object = dataclasses.field(default=None, compare=False, repr=False)


class Event(NamedTuple):
    """One recorded cost on device ``device``'s modeled timeline [start, end). (A named tuple:
    one is created per recorded piece of work.)"""

    device: int
    start: float
    end: float
    cost: Cost
    seq: int
    thread: int = 0

    @property
    def duration(self) -> float:
        return self.end - self.start
