"""The modeled time of a simulated kernel: an instruction-level schedule on one NeuronCore.

NKI exposes the engines directly, so its cost is modeled per instruction rather than per
op (the roofline of ``torch_neuronx.perf`` is for whole ops):

- each engine (Tensor, Vector, Scalar, GpSimd) executes its instructions in program order;
  the engines run in parallel, synchronised only by data: an instruction starts when its
  engine is free, the tensors it reads are written (read-after-write) and the tiles it writes
  are done being written (write-after-write; whole-tensor granularity) [NKI1: "each engine has
  its own instruction stream ... synchronised by semaphores"];
- an element-wise instruction over N elements per partition takes ``max(64, N / speed-up)``
  engine cycles on 128 lanes (two-input VectorE instructions 2N [NKI1], fp32 ones scaled by
  ``VECTOR_FP32_BINARY_CALIBRATION``, fitted to a published profile), with the 16-bit modes
  of NeuronCore-v3/v4 (``perf.roofline.element_rate``; MIN_II ~64 cycles [SHARED]);
- ``nc_matmul`` takes ``max(N, 64)`` TensorE cycles for N moving columns [NKI1], 4x for fp32
  inputs [SCHEMA]; fp8 double-row mode the same cycles for twice the contraction [NKI2];
- DMA: transfers share the core's DMA bandwidth (16 engines, 368 GB/s per NeuronCore-v3
  [DMA]) and each completes ~1.3 us after it is issued [DMA];
- SPMD programs are placed round-robin on the physical cores of the logical core (LNC=2: two
  programs run in parallel, as ``kernel[2]`` does on hardware); plus one launch overhead
  (``perf.params.eager_launch_s``).

- DMA with a dynamic address: hardware DGE ~600 ns before the transfer [DGE]; indirect DMA
  (``vector_offset``): the transfer waits for a GpSimd pass generating its descriptors
  (an assumption: AWS publishes no figure).

Not modeled: write-after-read hazards (tiles are assumed renamed), SBUF/PSUM bank conflicts,
static DMA descriptor generation, access-pattern stride penalties, TensorE warm-up/throttling.
The figures come from ``torch_neuronx.runtime.hardware`` (each with its public source).
"""

from __future__ import annotations

from torch_neuronx.runtime import hardware
from torch_neuronx.runtime.engines import Engine

#: Measured / published-rule time of a two-input fp32 Vector Engine instruction (the
#: published rule: 2N cycles for N elements per partition [NKI1]). Fitted on one published
#: profile, AWS's Fused Mamba tutorial ``mamba_v2`` (4096 channels, seq 512, 16 states: 1.61 ms
#: with VectorE 99.63% active on NeuronCore-v2), by benchmarks/bench_nki_cost.py; its other
#: published points are the validation set (docs/nki.md, "Cost rules against published
#: profiles"). It absorbs what the compiler does to such kernels (e.g. hoisting the
#: state-invariant ``delta * u``), which the simulator, executing the kernel as written, cannot.
VECTOR_FP32_BINARY_CALIBRATION = 0.681

#: Hardware DGE: "Each hardware-DGE DMA instruction takes approximately 600 ns to execute"
#: (AWS, "Descriptor Generation Engine (DGE) Reference",
#: https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/deep-dives/nki-dge.html): added
#: before a DMA whose address is dynamic (a register / scalar_offset start). Published figure,
#: not checked against a profile.
HWDGE_SECONDS = 600e-9

#: the engines a kernel's instructions are scheduled on
ENGINES = (Engine.tensor, Engine.vector, Engine.scalar, Engine.gpsimd, Engine.dma)


class Timeline:
    """Per physical core: when each engine is free; per storage: when its data is ready.

    ``core`` is the kernel's target core (``nki.target.CoreTarget.core``, i.e. the topology's
    one hardware description): its generation and its LNC come from the same object."""

    def __init__(self, core: hardware.LogicalCore):
        self.lnc = core.lnc
        self.core = core
        c = self.core.core
        self.min_ii = float(c.mm_init_cycles)
        self.clock = {
            Engine.tensor: float(c.tensor_clock),
            Engine.vector: float(c.vector_clock),
            Engine.scalar: float(c.scalar_clock),
            Engine.gpsimd: float(c.gpsimd_clock),
        }
        self.dma_bw = float(c.dma_bw)  # one physical core's DMA engines
        self.dma_latency = float(hardware.DMA_FIXED_LATENCY)
        self.free = [dict.fromkeys(ENGINES, 0.0) for _ in range(self.lnc)]
        self.busy = dict.fromkeys(ENGINES, 0.0)
        self.end = 0.0
        self.core_index = 0
        self._rates = {}
        self.not_before = 0.0  # with_schedule: the next instruction starts no earlier
        self.last_end = 0.0  # end of the most recently issued instruction
        # (core, engine, start, end, engine free after, writes) of that instruction
        self.last_issue = None

    def program(self, index: int):
        self.core_index = index % self.lnc

    def element_seconds(self, engine: Engine, free: int, inputs: int, bits: int) -> float:
        key = (engine, inputs, bits)
        per = self._rates.get(key)
        if per is None:
            from torch_neuronx.perf import roofline

            rate = roofline.element_rate(self.core, engine, inputs, bits) / self.lnc  # one core
            if engine == Engine.vector and inputs >= 2 and bits > 16:
                rate /= VECTOR_FP32_BINARY_CALIBRATION
            clock = self.clock.get(engine, self.clock[Engine.vector])
            per = self._rates[key] = (128.0 / rate, self.min_ii / clock)  # s per element, MIN_II
        return max(per[1], free * per[0])

    hwdge_seconds = HWDGE_SECONDS

    def swdge_seconds(self, offsets: int) -> float:
        """GpSimd time to generate the descriptors of ``offsets`` indirect rows. Software DGE
        "consumes GpSimd Engine cycles for descriptor generation" [DGE] but AWS publishes no
        figure: ASSUMPTION, one GpSimd element-wise pass over the offsets (one descriptor per
        offset on 128 lanes, at least the 64-cycle minimum), which the transfer waits for."""
        return self.element_seconds(Engine.gpsimd, max(1, -(-offsets // 128)), 1, 32)

    def matmul_seconds(self, n: int, bits: int, double_row: bool = False) -> float:
        """Initiation interval of one MultiplyMoving over ``n`` moving columns:
        ``max(N, MM_INIT_LATENCY)`` TensorE cycles for BF16/FP16/TF32/FP8, "roughly 4x" for
        FP32 [NKI1, "Tensor Engine: Performance Consideration"]. FP8 double-row: the same
        cycles as BF16 for twice the contraction ("takes the same amount of time as the
        regular BF16/FP16 ... sequence with a 128 contraction dimension" [NKI2]), so its
        throughput doubles through the FLOPs, not a shorter instruction."""
        cycles = max(float(n), self.min_ii)
        if bits >= 32:
            cycles *= 4  # FP32 costs 4x BF16 time [SCHEMA]
        return cycles / self.clock[Engine.tensor]

    def issue(self, engine, seconds, reads, writes, dma=False, after=0.0, extra=0.0) -> float:
        """Schedule one instruction; ``after``: it cannot start before that time (its
        descriptors); ``extra``: fixed time before a DMA's transfer (hardware DGE)."""
        free = self.free[self.core_index]
        deps = after
        for s in reads:
            r = s.ready
            if r > deps:
                deps = r
        for s in writes:  # write-after-write on tiles; HBM writes go to disjoint regions
            if s.rec is not None:
                r = s.ready
                if r > deps:
                    deps = r
        start = max(free[engine], deps)
        if self.not_before:
            start = max(start, self.not_before)
            self.not_before = 0.0
        if dma:
            start += extra
            free[engine] = start + seconds  # bandwidth is busy for bytes / bandwidth
            end = free[engine] + self.dma_latency
        else:
            end = free[engine] = start + seconds
        self.busy[engine] += seconds
        for s in writes:
            s.ready = end
        if end > self.end:
            self.end = end
        self.last_end = end
        self.last_issue = (self.core_index, engine, start, end, free[engine], writes)
        return end

    def delay_last(self, not_before: float):
        """Move the latest instruction to start at ``not_before`` (nki/instructions.py's
        ``depends_on``); returns its new entry."""
        core, engine, start, end, free_after, writes = self.last_issue
        shift = not_before - start
        free = self.free[core]
        if free.get(engine, 0.0) == free_after:
            free[engine] = free_after + shift
        for s in writes:
            s.ready = max(s.ready, end + shift)
        if end + shift > self.end:
            self.end = end + shift
        self.last_end = end + shift
        self.last_issue = (core, engine, not_before, end + shift, free_after + shift, writes)
        return self.last_issue


def model(ex):
    """(modeled seconds, {engine: busy seconds}) of the launch."""
    from torch_neuronx.perf import params

    tl = ex.timeline
    overhead = params.current().eager_launch_s
    return tl.end + overhead, {k: v for k, v in tl.busy.items() if v > 0}


def kernel_cost(ex, report):
    from torch_neuronx.perf import events as ev
    from torch_neuronx.perf import params

    busy = report.modeled_busy
    engine = max(busy, key=busy.get) if busy else Engine.vector
    overhead = params.current().eager_launch_s
    # the CC-Cores' collective time (nki.collectives) is neither compute nor the core's DMA
    compute = max(
        (v for k, v in busy.items() if k not in (Engine.dma, Engine.collective)), default=0.0
    )
    memory = busy.get(Engine.dma, 0.0)
    network = busy.get(Engine.collective, 0.0)  # nki.collectives on the CC-Cores
    bound = (
        "launch"
        if overhead > report.modeled_seconds - overhead
        else "network"
        if network > max(compute, memory)
        else ("compute" if compute >= memory else "memory")
    )
    g = f"[{','.join(map(str, report.grid))}]" if report.grid else ""
    return ev.Cost(
        kind=ev.KERNEL,
        name=f"nki:{report.name}{g}",
        engine=engine,
        duration=report.modeled_seconds,
        flops=report.tensor_flops,
        bytes=float(report.dma_bytes),
        compute_s=compute,
        memory_s=memory,
        overhead_s=overhead,
        bound=bound,
        detail=f"{report.total_instructions} NKI instructions: "
        + ", ".join(f"{k} {v}" for k, v in sorted(report.instructions.items())),
        busy=tuple(sorted(busy.items())),
    )


def charge(ex, report):
    """Put the launch on its device's modeled timeline when somebody measures (a device
    event for ``torch_neuronx.perf.measure`` and the profiler)."""
    from torch_neuronx import perf

    if not perf.recording():
        return
    dev = ex.device
    index = dev.index if dev is not None and dev.index is not None else max(ex.route, 0)
    perf.record(index, kernel_cost(ex, report))
