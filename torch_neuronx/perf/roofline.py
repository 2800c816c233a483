"""The roofline: how long a kernel's :class:`Work` takes on one logical NeuronCore.

duration = max(compute time on the engines, HBM time) + fixed overhead

- **TensorE** (matmul, convolution, attention): FLOPs at the dtype's peak (BF16/FP16, FP8,
  FP32 rates from the hardware table), slowed by the published tile rule: a matmul is issued
  as 128 (K, on partitions) x 128 (stationary free size) x <=512 (moving free size) tiles, and
  a MultiplyMoving instruction costs max(N, 64) cycles [NKI1], so partial tiles and narrow
  moving tiles waste cycles. The compiler may swap the operands (C^T = B^T A^T); we take the
  cheaper mapping. Attention/convolution charge partial tiles on their contraction length only.
  On top of the tile rule a matmul reaches ``params.tensor_efficiency`` (0.65, fitted on the
  workload calibration set of the newest Neuron SDK era, ``perf/workload_fit.py``). An eager matmul also pays TensorE's
  warm-up (50% of peak ramping to full over ~3 us [THR]).
- **VectorE / ScalarE / GpSimdE** (element-wise, reductions): 128 lanes, one element per lane
  per cycle for one-input instructions and two cycles for two-input VectorE instructions [NKI1],
  with the 16-bit speed-ups of NeuronCore-v3/v4 [NKI2, NKI3]. GpSimdE: 8 processors of 512-bit
  SIMD [NKI1]. Engines of one fused kernel run concurrently (the compiler pipelines them), so a
  kernel's compute time is its busiest engine's time.
- **HBM**: bytes read and written at the logical core's share of the chip's HBM bandwidth,
  capped by its DMA engines' bandwidth, times ``params.hbm_efficiency`` (1.0: fitted, the
  ceiling); SBUF/PSUM traffic is not charged (SBUF bandwidth is ~20x HBM's [PERF]).
- **Overhead**: ``params.eager_launch_s`` for an eager op, ``params.kernel_overhead_s`` for a
  kernel inside a compiled graph (plus ``params.graph_launch_s`` once per graph).

Not modeled: instruction scheduling and dependencies inside a kernel, SBUF capacity spills,
DMA transfer-size efficiency, strided access penalties, engine clock throttling beyond the
warm-up, and any overlap between consecutive eager ops (they run one after another).
"""

from __future__ import annotations

import math

from torch_neuronx.runtime import hardware
from torch_neuronx.runtime.engines import Engine
from torch_neuronx.runtime.hardware import LogicalCore

from . import events as ev
from . import params as _params


def _mm_cycles(m: int, k: int, n: int, init: int) -> float:
    """TensorE cycles (one physical core) of an M x K x N matmul with M stationary."""
    full, rem = divmod(n, 512)
    moving = full * 512 + (max(rem, init) if rem else 0)
    return math.ceil(k / 128) * math.ceil(m / 128) * moving


def tile_efficiency(dims: tuple, init: int = 64) -> float:
    """Useful fraction of TensorE cycles for matmuls (batch, M, K, N) under the tile rule."""
    useful = wasted = 0.0
    for b, m, k, n in dims:
        if m <= 0 or k <= 0 or n <= 0:
            continue
        ideal = m * k * n / (128 * 128)
        cycles = min(_mm_cycles(m, k, n, init), _mm_cycles(n, k, m, init))
        useful += b * ideal
        wasted += b * cycles
    return useful / wasted if wasted else 1.0


def contraction_efficiency(k: int) -> float:
    """Partition-dim efficiency of a contraction of length k: k / (128 * ceil(k / 128))."""
    return k / (128 * math.ceil(k / 128)) if k > 0 else 1.0


def warmup_extra(compute_s: float, ramp_s: float = 3e-6) -> float:
    """Extra time from TensorE starting at 50% of peak and ramping linearly to 100% over
    ``ramp_s`` [THR]: work done by time t (in seconds at peak) is 0.5 t + t^2 / (4 ramp)."""
    done_in_ramp = 0.75 * ramp_s
    if compute_s >= done_in_ramp:
        return ramp_s - done_in_ramp
    # solve 0.5 t + t^2/(4 r) = c  ->  t = r (-1 + sqrt(1 + 4c/r))
    t = ramp_s * (-1 + math.sqrt(1 + 4 * compute_s / ramp_s))
    return t - compute_s


def element_rate(core: LogicalCore, engine: Engine, n_inputs: int, bits: int) -> float:
    """Elements per second of one element-wise instruction stream on a logical core."""
    c = core.core
    lanes = float(c.lanes)
    if engine == Engine.scalar:
        rate = (
            lanes * float(c.scalar_clock) * (float(c.scalar_16bit_speedup) if bits <= 16 else 1.0)
        )
    elif engine == Engine.gpsimd:
        key = 8 if bits <= 8 else 16 if bits <= 16 else 32
        rate = float(c.gpsimd_lanes[key]) * float(c.gpsimd_clock)
    else:  # VectorE (and anything element-wise without a better home)
        rate = lanes * float(c.vector_clock)
        if n_inputs >= 2:
            rate = rate / 2 * (float(c.vector_16bit_binary_speedup) if bits <= 16 else 1.0)
        elif bits <= 16:
            rate *= float(c.vector_16bit_speedup)
    return rate * core.lnc


def engine_times(core: LogicalCore, elem_work: tuple) -> dict:
    busy: dict = {}
    for engine, elements, n_in, bits in elem_work:
        busy[engine] = busy.get(engine, 0.0) + elements / element_rate(core, engine, n_in, bits)
    return busy


def tensor_time(core: LogicalCore, work: ev.Work) -> float:
    p = _params.current()
    peak = core.tensor_peak(work.dtype) * p.tensor_efficiency
    if work.mm_dims:
        return work.flops / (
            peak * tile_efficiency(work.mm_dims, int(float(core.core.mm_init_cycles)))
        )
    if work.contractions:
        return sum(
            work.flops * share / (peak * contraction_efficiency(k))
            for share, k in work.contractions
        )
    return work.flops / peak


def memory_time(core: LogicalCore, nbytes: float) -> float:
    return nbytes / (core.hbm_bw * _params.current().hbm_efficiency)


def spill_bytes(work: ev.Work, core: LogicalCore) -> float:
    """HBM bytes a fused kernel spills. At each boundary between its member ops where the live
    intermediates exceed the logical core's SBUF, the excess does not stay on chip. Each
    intermediate (``work.spans``) spills the largest share of it that did not fit at any
    boundary it is live across: written to HBM once and read back once per member that reads
    it -- the traffic the same tensor has when the ops run unfused, never once per boundary
    it stays live across (that charged a loop-unrolled or long fused kernel more HBM traffic
    than its ops run eagerly). ASSUMPTION: the compiler keeps each live intermediate whole (no
    re-tiling of the kernel to fit). Works without spans (older plans) pay 2 x the excess at
    each boundary. Capped so the kernel never moves more than its member ops unfused
    (``work.unfused_bytes``): a compiler splits a kernel rather than spill more than that,
    so a fused plan is never modeled slower than the same ops run one by one (issue 23
    item 4: "cost the spill traffic, or split the kernel")."""
    if not work.live:
        return 0.0
    cap = float(core.sbuf)
    if not work.spans:
        total = 2.0 * sum(max(0.0, live - cap) for live in work.live)
        if work.unfused_bytes:
            total = min(total, max(0.0, work.unfused_bytes - work.bytes))
        return total
    over = [max(0.0, live - cap) / live if live > 0 else 0.0 for live in work.live]
    total = 0.0
    for first, end, nbytes, reads in work.spans:
        share = max(over[first:end], default=0.0)
        total += nbytes * share * (1 + reads)
    if work.unfused_bytes:
        total = min(total, max(0.0, work.unfused_bytes - work.bytes))
    return total


def cost_of(work: ev.Work, core: LogicalCore, *, in_graph: bool = False) -> ev.Cost:
    """The modeled cost of ``work`` as an eager op (``in_graph=False``) or as one kernel of a
    compiled graph."""
    p = _params.current()
    busy: dict = {}
    if work.engine == Engine.tensor:
        busy[Engine.tensor] = tensor_time(core, work)
    busy.update({k: busy.get(k, 0.0) + v for k, v in engine_times(core, work.elem_work).items()})
    compute = max(busy.values(), default=0.0)
    spill = spill_bytes(work, core)
    memory = memory_time(core, work.bytes + spill)
    overhead = p.kernel_overhead_s if in_graph else p.eager_launch_s
    if not in_graph and p.tensor_warmup and busy.get(Engine.tensor):
        extra = warmup_extra(busy[Engine.tensor], float(hardware.TENSOR_WARMUP))
        busy[Engine.tensor] += extra
        compute = max(compute, busy[Engine.tensor])
    body = max(compute, memory)
    bound = "launch" if overhead > body else ("compute" if compute >= memory else "memory")
    busy[Engine.dma] = memory
    return ev.Cost(
        kind=ev.KERNEL if in_graph else ev.OP,
        name=work.name,
        engine=work.engine,
        duration=body + overhead,
        flops=work.flops,
        bytes=work.bytes + spill,
        compute_s=compute,
        memory_s=memory,
        overhead_s=overhead,
        bound=bound,
        dtype=work.dtype,
        shapes=work.shapes,
        detail=(
            (("fused: " + ", ".join(work.ops)) if len(work.ops) > 1 else "")
            + (
                f" (spills {spill / 2**20:.1f} MiB through HBM: working set > SBUF)"
                if spill
                else ""
            )
        ).strip(),
        busy=tuple(sorted((k, v) for k, v in busy.items() if v > 0)),
        basis=work,
    )


def graph_launch_cost(name: str) -> ev.Cost:
    s = _params.current().graph_launch_s
    return ev.Cost(
        kind=ev.GRAPH, name=name, engine=Engine.launch, duration=s, overhead_s=s, bound="launch"
    )
