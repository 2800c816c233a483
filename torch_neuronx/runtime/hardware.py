"""The hardware table: every Trainium figure the emulator and its performance model use.

One source of truth, and one description of "which hardware am I on": a :class:`Target` (an
instance of :data:`INSTANCES` and one :class:`LogicalCore` of its chip in :data:`CHIPS`).
``runtime/topology.py`` builds the process's target from the environment; the allocator's
capacity, the performance model (``torch_neuronx/perf``) and the NKI simulator
(``torch_neuronx/nki``) all read that same object, and their own types (the runtime's
``InstanceProfile``, NKI's ``CoreTarget``, the report's ``Profile``) are views of it. Adding a
generation is one :data:`CHIPS` entry (plus one :data:`INSTANCES` entry per instance size); an
unknown generation or instance is an error that names the valid ones, never a fallback.

Every number is a :class:`Fig`: a value, its unit, where it comes from and how sure we are.
``kind`` says which:

- ``published``: stated in the public document named by ``source`` (a key of :data:`SOURCES`);
- ``derived``: our arithmetic from published figures (``note`` shows the arithmetic);
- ``third-party``: from a public non-AWS page (prices mostly), with the date it was read;
- ``assumption``: no public figure exists; ``note`` gives the reasoning. Users can override
  every model parameter (see ``torch_neuronx.perf.params``) and every price.

Conventions: bandwidths in bytes/s, FLOP rates in FLOP/s, times in seconds, sizes in bytes,
clocks in Hz. "Physical core" is one NeuronCore; a logical core (what ``neuron:N`` is) groups
``lnc`` physical cores (Logical NeuronCore Configuration; Trn1 has no LNC, i.e. LNC=1).

No Trainium was used to produce or check any of these numbers.
"""

from __future__ import annotations

import dataclasses
import functools

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
T = 1e12
G = 1e9
US = 1e-6

# --- sources ------------------------------------------------------------------------------
_B = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest"
SOURCES: dict[str, str] = {
    "TRN1": f"{_B}/general/arch/neuron-hardware/trainium.html",
    "NC2": f"{_B}/general/arch/neuron-hardware/neuron-core-v2.html",
    "TRN1I": "https://awsdocs-neuron.readthedocs-hosted.com/en/v2.9.1/general/arch/neuron-hardware/trn1-arch.html",
    "T2": f"{_B}/about-neuron/arch/neuron-hardware/trainium2.html",
    "T3": f"{_B}/about-neuron/arch/neuron-hardware/trainium3.html",
    "NC3": f"{_B}/about-neuron/arch/neuron-hardware/neuron-core-v3.html",
    "NC4": f"{_B}/about-neuron/arch/neuron-hardware/neuron-core-v4.html",
    "TRN2I": f"{_B}/about-neuron/arch/neuron-hardware/trn2-arch.html",
    "TRN3I": f"{_B}/about-neuron/arch/neuron-hardware/trn3-arch.html",
    "LNC": f"{_B}/about-neuron/arch/neuron-features/logical-neuroncore-config.html",
    "NKI1": f"{_B}/nki/guides/architecture/trainium_inferentia2_arch.html",
    "NKI2": f"{_B}/nki/guides/architecture/trainium2_arch.html",
    "NKI3": f"{_B}/nki/guides/architecture/trainium3_arch.html",
    "PERF": f"{_B}/nki/deep-dives/nki_perf_guide.html",
    "DMA": f"{_B}/nki/deep-dives/nki-dma-bandwidth-guide.html",
    "SHARED": f"{_B}/nki/api/nki.api.shared.html",
    "SCHEMA": f"{_B}/tools/neuron-explorer/profile-schema-reference.html",
    "THR": f"{_B}/tools/neuron-explorer/overview-summary-page.html",
    "CC": f"{_B}/compiler/neuronx-cc/api-reference-guide/index.html",
    "COLL": f"{_B}/neuron-runtime/about/collectives.html",
    "INTER": f"{_B}/neuron-runtime/explore/internode-collective-comm.html",
    "INTRA": f"{_B}/neuron-runtime/explore/intranode-collective-comm.html",
    "OSS3": f"{_B}/libraries/nxd-inference/tutorials/trn3-gpt-oss-120b-tutorial.html",
    "ASYNC": "https://github.com/aws-neuron/aws-neuron-sdk/blob/master/vllm-neuron/docs/design/framework/async_execution.md",
    "DRV": "https://github.com/aws-neuron/aws-neuron-driver/blob/master/v4/neuron_dhal_v4.c",
    "CAPB": "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-capacity-blocks.html",
    "USAGE": "https://www.usage.ai/blogs/aws/ai-ml-cost/trainium-vs-gpu-instances/",
    "SPARECORES": "https://sparecores.com (AWS trn2.48xlarge listing, us-east-2)",
    # pinned to the 2023 commit: later versions of the same file list reserved-instance (RI-effective)
    # rates (trn1.2xlarge 0.512, trn1.32xlarge 8.197), not on-demand ones
    "TRN1PRICE": "https://github.com/aws-neuron/aws-neuron-sdk/blob/c6ec6484235acaf32f6cfdf0c4a60d62d1859618/general/benchmarks/trn1/trn1_instance_prices.csv",
    "NCCOM": f"{_B}/tools/neuron-sys-tools/nccom-test.html",
    "TRN1INF": f"{_B}/about-neuron/benchmarks/trn1/trn1-inference-performance.html",
    "EC2PRICELIST": "https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonEC2/current/us-east-1/index.csv",
    "UNVERIFIED": "public benchmark write-ups without a citable URL (see note)",
    "PCIE": "https://pcisig.com/specifications (PCI Express base specification link rates)",
    "OVERLAP": f"{_B}/neuron-runtime/explore/compute-comm-overlap.html",
    "DDP": "https://pytorch.org/docs/stable/notes/ddp.html (gradient buckets, bucket_cap_mb=25, "
    "all-reduce overlapped with backward)",
}


@dataclasses.dataclass(frozen=True)
class Fig:
    """One figure with its provenance. ``value`` is None when no figure exists at all."""

    value: float | None
    unit: str
    source: str = ""  # key(s) of SOURCES, comma separated; empty for assumptions
    kind: str = "published"  # published | derived | third-party | assumption
    note: str = ""

    def __float__(self) -> float:
        if self.value is None:
            raise ValueError(f"no figure available ({self.note})")
        return float(self.value)

    @property
    def urls(self) -> list[str]:
        return [SOURCES[k.strip()] for k in self.source.split(",") if k.strip()]

    def cite(self) -> str:
        """Short provenance text for tables: ``[T2]``, ``derived from [T2]``, ``assumption``."""
        keys = ", ".join(k.strip() for k in self.source.split(",") if k.strip())
        if self.kind == "published":
            return f"[{keys}]"
        if self.kind == "assumption":
            return "assumption" + (f" (from [{keys}])" if keys else "")
        return f"{self.kind} [{keys}]" if keys else self.kind


def pub(value, unit, source, note="") -> Fig:
    return Fig(value, unit, source, "published", note)


def der(value, unit, source, note) -> Fig:
    return Fig(value, unit, source, "derived", note)


def assume(value, unit, note, source="") -> Fig:
    return Fig(value, unit, source, "assumption", note)


# --- one physical NeuronCore per generation --------------------------------------------------
@dataclasses.dataclass(frozen=True)
class CoreSpec:
    """One physical NeuronCore.

    Element-wise engines (VectorE, ScalarE, GpSimdE) are described by clock and elements per
    cycle: the NKI cost rule is ~N cycles for an instruction over N elements per partition on
    128 lanes, 2N for VectorE instructions with two tensor inputs [NKI1]; NeuronCore-v3/v4 add
    faster 16-bit modes [NKI2, NKI3] (``*_16bit_speedup``)."""

    name: str
    version: int  # the N of NeuronCore-vN (nki.isa.get_nc_version), not parsed from ``name``
    tensor_peak: dict  # dtype class ("bf16", "fp8", "fp32", "mxfp8") -> Fig FLOP/s
    tensor_clock: Fig
    vector_clock: Fig
    scalar_clock: Fig
    gpsimd_clock: Fig
    lanes: Fig  # partitions processed in parallel by VectorE/ScalarE
    vector_16bit_speedup: Fig  # one-input (tensor_scalar / copy) 16-bit mode
    vector_16bit_binary_speedup: Fig  # two-input (tensor_tensor) 16-bit mode
    scalar_16bit_speedup: Fig
    gpsimd_lanes: dict  # element bits (32/16/8) -> Fig elements per cycle
    vector_fp32_flops: Fig
    scalar_fp32_flops: Fig
    sbuf: Fig
    psum: Fig
    dma_bw: Fig
    mm_init_cycles: Fig  # TensorE MultiplyMoving minimum initiation interval
    instr_overhead_cycles: Fig  # static overhead of a small/dependent engine instruction


_NC2 = CoreSpec(
    name="NeuronCore-v2",
    version=2,
    tensor_peak={
        "bf16": pub(
            92 * T,
            "FLOP/s",
            "NKI1",
            "BF16/FP16/TF32/cFP8 maximum throughput; the NC2 page says 'over 90'",
        ),
        "fp8": pub(92 * T, "FLOP/s", "NKI1", "cFP8 runs at the BF16 rate on NeuronCore-v2"),
        "fp32": pub(23 * T, "FLOP/s", "NKI1"),
    },
    tensor_clock=pub(2.8 * G, "Hz", "NKI1"),
    vector_clock=pub(1.12 * G, "Hz", "NKI1"),
    scalar_clock=pub(1.4 * G, "Hz", "NKI1"),
    gpsimd_clock=pub(1.4 * G, "Hz", "NKI1"),
    lanes=pub(128, "elements/cycle", "NKI1", "128 parallel lanes, one per SBUF partition"),
    vector_16bit_speedup=pub(1, "x", "NKI1", "no 16-bit perf mode before NeuronCore-v3"),
    vector_16bit_binary_speedup=pub(1, "x", "NKI1"),
    scalar_16bit_speedup=pub(1, "x", "NKI1"),
    gpsimd_lanes={
        32: pub(128, "elements/cycle", "NKI1", "8 processors x 16 FP32 lanes"),
        16: pub(256, "elements/cycle", "NKI1", "8 x 32 FP16 lanes"),
        8: pub(512, "elements/cycle", "NKI1", "8 x 64 INT8 lanes"),
    },
    vector_fp32_flops=pub(2.3 * T, "FLOP/s", "NC2"),
    scalar_fp32_flops=pub(2.9 * T, "FLOP/s", "NC2"),
    sbuf=pub(24 * MiB, "B", "NKI1", "128 partitions x 192 KiB"),
    psum=pub(2 * MiB, "B", "NKI1", "128 partitions x 16 KiB"),
    # the chip page's "1 TB/s of DMA" is not what one core's engines move: the DMA guide gives
    # 16 engines x 17 B/ns per NeuronCore-v2 (272 GB/s), as it does 23 and 33 B/ns for v3/v4
    dma_bw=pub(272 * G, "B/s", "DMA", "16 DMA engines x 17 B/ns"),
    mm_init_cycles=pub(64, "cycles", "NKI1"),
    instr_overhead_cycles=pub(
        100, "cycles", "NKI1", "static overhead of tiny or dependent VectorE instructions"
    ),
)

# Published for NeuronCore-v2 only; later cores are assumed to match.
_MM_INIT_AS_NC2 = assume(64, "cycles", "only the NeuronCore-v2 value is published [NKI1]")
_INSTR_OVERHEAD_AS_NC2 = assume(100, "cycles", "only the NeuronCore-v2 value is published [NKI1]")

_NC3 = CoreSpec(
    name="NeuronCore-v3",
    version=3,
    tensor_peak={
        "bf16": pub(79 * T, "FLOP/s", "NKI2,NC3", "BF16/FP16/TF32 dense"),
        "fp8": pub(158 * T, "FLOP/s", "NKI2,NC3", "FP8 double-row mode"),
        "fp32": pub(20 * T, "FLOP/s", "NKI2", "FP32 costs 4x BF16 time [SCHEMA]"),
    },
    tensor_clock=pub(2.4 * G, "Hz", "NKI2"),
    vector_clock=pub(0.96 * G, "Hz", "NKI2"),
    scalar_clock=pub(1.2 * G, "Hz", "NKI2"),
    gpsimd_clock=pub(1.2 * G, "Hz", "NKI2"),
    lanes=pub(
        128,
        "elements/cycle",
        "NKI1",
        "128 lanes; NKI2 quotes 256 elements/cycle for non-16-bit "
        "dtypes, which conflicts with the NKI1 cost rule; we keep the rule (within 2x)",
    ),
    vector_16bit_speedup=pub(
        4, "x", "NKI2", "tensor_copy/tensor_scalar on SBUF-resident BF16/FP16"
    ),
    vector_16bit_binary_speedup=pub(2, "x", "NKI2", "tensor_tensor with all operands BF16"),
    scalar_16bit_speedup=pub(1, "x", "NKI3", "the ScalarE 2x mode arrives with NeuronCore-v4"),
    gpsimd_lanes={
        32: pub(128, "elements/cycle", "NKI1,NC3", "8 processors x 16 FP32 lanes"),
        16: pub(256, "elements/cycle", "NKI1,NC3"),
        8: pub(512, "elements/cycle", "NKI1,NC3"),
    },
    vector_fp32_flops=pub(1.0 * T, "FLOP/s", "NC3"),
    scalar_fp32_flops=pub(1.2 * T, "FLOP/s", "NC3"),
    sbuf=pub(28 * MiB, "B", "NKI2", "128 partitions x 224 KiB (224 MiB per chip [T2])"),
    psum=pub(2 * MiB, "B", "NKI2"),
    dma_bw=pub(368 * G, "B/s", "DMA", "16 DMA engines x 23 B/ns"),
    mm_init_cycles=_MM_INIT_AS_NC2,
    instr_overhead_cycles=_INSTR_OVERHEAD_AS_NC2,
)

_NC4 = CoreSpec(
    name="NeuronCore-v4",
    version=4,
    tensor_peak={
        "bf16": pub(79 * T, "FLOP/s", "NKI3,NC4", "BF16/FP16/TF32 dense"),
        "fp8": der(
            158 * T,
            "FLOP/s",
            "SCHEMA",
            "plain (non-MX) FP8 costs 0.5x BF16 time on Trn3 [SCHEMA]: 2 x 79",
        ),
        "mxfp8": pub(315 * T, "FLOP/s", "NKI3,NC4", "MXFP8/MXFP4 quad mode"),
        "fp32": pub(20 * T, "FLOP/s", "NKI3", "FP32 costs 4x BF16 time [SCHEMA]"),
    },
    tensor_clock=pub(2.4 * G, "Hz", "NKI3"),
    vector_clock=pub(1.2 * G, "Hz", "NKI3"),
    scalar_clock=pub(1.2 * G, "Hz", "NKI3"),
    gpsimd_clock=pub(1.2 * G, "Hz", "NKI3"),
    lanes=pub(128, "elements/cycle", "NKI1"),
    vector_16bit_speedup=pub(4, "x", "NKI3", "same perf modes as NeuronCore-v3"),
    vector_16bit_binary_speedup=pub(2, "x", "NKI3"),
    scalar_16bit_speedup=pub(2, "x", "NKI3", "256 BF16/FP16/FP8 elements per cycle vs 128 other"),
    gpsimd_lanes={
        32: pub(128, "elements/cycle", "NKI3", "128 elements per cycle for all dtypes"),
        16: pub(128, "elements/cycle", "NKI3"),
        8: pub(128, "elements/cycle", "NKI3"),
    },
    vector_fp32_flops=pub(1.2 * T, "FLOP/s", "NKI3"),
    scalar_fp32_flops=pub(1.2 * T, "FLOP/s", "NKI3"),
    sbuf=pub(32 * MiB, "B", "NKI3,NC4"),
    psum=pub(2 * MiB, "B", "NKI3"),
    dma_bw=pub(528 * G, "B/s", "DMA", "16 DMA engines x 33 B/ns"),
    mm_init_cycles=_MM_INIT_AS_NC2,
    instr_overhead_cycles=_INSTR_OVERHEAD_AS_NC2,
)


# --- one chip per generation -------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class ChipSpec:
    generation: str  # "trn1" | "trn2" | "trn3"
    chip_name: str
    source: str  # the chip's architecture page (key of SOURCES)
    core: CoreSpec
    physical_cores: int
    lnc_allowed: tuple
    default_lnc: Fig
    hbm_capacity: Fig
    hbm_bw: Fig
    dma_bw: Fig
    peak: dict  # published chip-level dense peaks per dtype class
    neuronlink_bw: Fig  # per chip, chip-to-chip inside an instance (aggregate figure as published)
    neuronlink_latency: Fig  # per hop, chip to chip inside an instance
    on_chip_latency: Fig  # per hop between cores of one chip
    efa_latency: Fig  # per hop between instances
    efa_bw_per_chip: Fig
    host_link_bw: Fig  # host <-> device, per chip, one direction
    host_link_latency: Fig
    cc_cores: Fig


_DMA_FIXED = pub(1.3 * US, "s", "DMA", "fixed setup/semaphore latency of one DMA transfer")
_HOP_INTRA = pub(
    1.5 * US, "s", "INTRA", "Ring/KangaRing per hop inside a node is ~1-2 us; midpoint"
)
_HOP_INTER = pub(15 * US, "s", "COLL,INTER", "per hop, HBM to HBM between servers")
_HOP_ON_CHIP = assume(
    1.3 * US,
    "s",
    "no published figure for a hop between cores of one chip; one "
    "DMA transfer's fixed latency (1.3 us [DMA]) is the least it can cost",
    "DMA",
)
_HOST_LAT = assume(
    10 * US,
    "s",
    "no published host<->device transfer latency; a PCIe round trip plus "
    "runtime descriptor setup and a few DMA fixed latencies (1.3 us each [DMA])",
    "DMA",
)


def _pcie_host_link(gen: int, direction_gb_s: int) -> Fig:
    """The host link of a chip on a PCIe ``gen`` x16 slot (no host-link figure is published)."""
    return assume(
        direction_gb_s * 0.8 * G,
        "B/s",
        f"host link not published; PCIe Gen{gen} x16 ({direction_gb_s} GB/s per direction "
        "[PCIE]) at 80% efficiency",
        "PCIE",
    )


def _chip(pcie_gen: int, pcie_gb_s: int, **figures) -> ChipSpec:
    """One generation's chip: its own ``figures`` plus what every generation shares (the hop
    latencies and the host link's latency, none published per generation) and its host link."""
    return ChipSpec(
        neuronlink_latency=_HOP_INTRA,
        on_chip_latency=_HOP_ON_CHIP,
        efa_latency=_HOP_INTER,
        host_link_bw=_pcie_host_link(pcie_gen, pcie_gb_s),
        host_link_latency=_HOST_LAT,
        **figures,
    )


CHIPS: dict[str, ChipSpec] = {
    "trn1": _chip(
        pcie_gen=4,
        pcie_gb_s=32,
        generation="trn1",
        chip_name="Trainium",
        source="TRN1",
        core=_NC2,
        physical_cores=2,
        lnc_allowed=(1,),
        default_lnc=pub(
            1, "", "T2", "LNC arrives with Trainium2; a Trn1 logical core is one NeuronCore-v2"
        ),
        hbm_capacity=pub(32 * GiB, "B", "TRN1"),
        hbm_bw=pub(
            820 * GiB,
            "B/s",
            "TRN1,TRN1I",
            "820 GiB/s on the chip page and the instance page (13,120 GiB/s per 16 chips); "
            "NKI1 and the v2.9.1 chip page say 820 GB/s",
        ),
        dma_bw=pub(1 * T, "B/s", "TRN1"),
        peak={
            "bf16": pub(190 * T, "FLOP/s", "TRN1", "FP16/BF16/cFP8/TF32"),
            "fp8": pub(190 * T, "FLOP/s", "TRN1", "cFP8"),
            "fp32": pub(47.5 * T, "FLOP/s", "TRN1"),
        },
        neuronlink_bw=pub(
            384 * G,
            "B/s",
            "T2",
            "inter-chip interconnect per chip (Trn1 column of the Trn2 comparison)",
        ),
        efa_bw_per_chip=der(
            800e9 / 8 / 16, "B/s", "TRN1I", "trn1.32xlarge EFA 800 Gbps over 16 chips"
        ),
        cc_cores=pub(6, "", "T2,NKI1"),
    ),
    "trn2": _chip(
        pcie_gen=5,
        pcie_gb_s=64,
        generation="trn2",
        chip_name="Trainium2",
        source="T2",
        core=_NC3,
        physical_cores=8,
        lnc_allowed=(1, 2),
        default_lnc=pub(2, "", "LNC,CC"),
        hbm_capacity=pub(96 * GiB, "B", "T2,NKI2"),
        hbm_bw=pub(2.9 * T, "B/s", "T2,TRN2I", "the NKI guide says 3 TB/s [NKI2]"),
        dma_bw=pub(3.5 * T, "B/s", "T2"),
        peak={
            "bf16": pub(667 * T, "FLOP/s", "T2", "BF16/FP16/TF32 dense; 6% above 8 x 79 per core"),
            "fp8": pub(1299 * T, "FLOP/s", "T2"),
            "fp32": pub(181 * T, "FLOP/s", "T2"),
        },
        neuronlink_bw=pub(
            1024 * G,
            "B/s",
            "TRN2I",
            "intra-instance share of NeuronLink-v3's 1.28 TB/s per chip [T2]",
        ),
        efa_bw_per_chip=pub(200e9 / 8, "B/s", "COLL", "200 Gbps per chip"),
        cc_cores=pub(16, "", "T2", "the NKI guide says 20 [NKI2]"),
    ),
    "trn3": _chip(
        pcie_gen=5,
        pcie_gb_s=64,
        generation="trn3",
        chip_name="Trainium3",
        source="T3",
        core=_NC4,
        physical_cores=8,
        lnc_allowed=(1, 2),
        default_lnc=assume(
            2, "", "Trn3's default LNC is not stated; AWS's Trn3 tutorial runs LNC=2", "OSS3"
        ),
        hbm_capacity=pub(144 * GiB, "B", "T3,NKI3"),
        hbm_bw=pub(4.9 * T, "B/s", "T3,TRN3I", "the NKI guide says 4.7 TB/s [NKI3]"),
        dma_bw=pub(4.9 * T, "B/s", "T3"),
        peak={
            "bf16": pub(671 * T, "FLOP/s", "T3"),
            "mxfp8": pub(2517 * T, "FLOP/s", "T3", "MXFP8/MXFP4 only"),
            "fp8": der(
                1258 * T, "FLOP/s", "T3,SCHEMA", "plain FP8 at 0.5x BF16 time: 8 x 158 (approx.)"
            ),
            "fp32": pub(183 * T, "FLOP/s", "T3"),
        },
        neuronlink_bw=pub(
            2.56 * T,
            "B/s",
            "T3",
            "NeuronLink-v4 per device; the instance page says 2,048 GiB/s [TRN3I]",
        ),
        efa_bw_per_chip=der(
            200e9 / 8, "B/s", "TRN3I", "12.8 Tbps per 64-chip UltraServer = 200 Gbps per chip"
        ),
        cc_cores=pub(16, "", "T3", "the NKI guide says 20 [NKI3]"),
    ),
}


def chip(generation: str) -> ChipSpec:
    """The chip of ``generation`` ("trn2"); an unknown one is an error naming the valid ones."""
    try:
        return CHIPS[generation]
    except KeyError:
        raise ValueError(
            f"unknown Trainium generation {generation!r}; valid: {', '.join(CHIPS)}"
        ) from None


#: fixed costs that are properties of the hardware/runtime (model overheads are in perf.params)
DMA_FIXED_LATENCY = _DMA_FIXED
TENSOR_WARMUP = pub(
    3 * US, "s", "THR", "after idle TensorE starts at ~50% of peak and ramps to full over ~3 us"
)
SYNC_GRAPH_LAUNCH = pub(
    437 * US,
    "s",
    "ASYNC",
    "host dispatch per compiled-graph call in synchronous mode, "
    "measured in a vLLM example (includes vLLM's Python); async mode hides it",
)


# --- collectives as measured ------------------------------------------------------------------
# nccom-test's published runs show every collective paying a fixed cost of microseconds to
# hundreds of microseconds and reaching a bus bandwidth far below the DMA or NeuronLink peaks, so
# the collective model charges fixed(L) + factor * bytes / busbw(L) for the widest level L a group
# spans. "fitted" figures come from perf/collective_fit.py on the CALIBRATION rows of
# perf/collective_data.py (never on the VALIDATION rows); the rest are derived from them.


def _fit(value, unit, note) -> Fig:
    return Fig(value, unit, "NCCOM", "derived", "fitted to nccom-test (calibration set): " + note)


def _from(value, unit, note, source="NCCOM") -> Fig:
    return Fig(value, unit, source, "derived", note)


_T1 = {
    "core": (_fit(55.8 * US, "s", "2-rank all-reduce"), _fit(60.1 * G, "B/s", "2-rank all-reduce")),
    "chip": (
        _fit(158.6 * US, "s", "32-rank all-gather, with the instance level's bus bandwidth"),
        _fit(
            45.0 * G,
            "B/s",
            "the 64-rank all-reduce over 2 instances (its bytes cross this level too); the "
            "32-rank all-gather never reaches the bandwidth-bound regime (collective_fit.fit)",
        ),
    ),
    # nccom-test publishes no all-reduce inside a trn1.32xlarge: fitted to the Trn1 decode
    # calibration rows (two small all-reduces per layer at TP=32; perf/workload_fit.py)
    "chip:reduce": (
        _from(
            66.1 * US,
            "s",
            "fitted to the Trn1 decode calibration rows (perf/workload_fit.py): no published "
            "all-reduce inside a trn1.32xlarge",
            "TRN1INF",
        ),
        _from(45.0 * G, "B/s", "the chip level's bus bandwidth"),
    ),
    "instance": (
        _fit(877 * US, "s", "64-rank all-reduce over 2 instances"),
        _fit(45.0 * G, "B/s", "64-rank all-reduce over 2 instances"),
    ),
}
_T2_CHIP = (
    _fit(6.15 * US, "s", "32-rank all-gather (data movement)"),
    _fit(30.0 * G, "B/s", "32-rank all-gather (data movement; bandwidth-bound at 512 KiB)"),
)
_T2_CHIP_REDUCE = (
    _fit(101.5 * US, "s", "16-rank all-reduce (multistream example) + 512 MiB all-reduce"),
    _fit(105.3 * G, "B/s", "16-rank all-reduce (multistream example) + 512 MiB all-reduce"),
)
_T2 = {
    "core": (
        _fit(16.3 * US, "s", "4-rank all_gatherv, one size"),
        _from(
            30.0 * G,
            "B/s",
            "no multi-size run inside one Trainium2 chip: the chip level's data-movement fit "
            "(the one core-level run is an all-gather, data movement)",
        ),
    ),
    "chip": _T2_CHIP,
    "chip:reduce": _T2_CHIP_REDUCE,
    "instance": (
        _from(877 * US, "s", "no Trn2 multi-instance run: Trn1's EFA fixed cost"),
        _from(180 * G, "B/s", "Trn1's 45 GB/s x 4 (200 vs 50 Gbps EFA per chip)", "NCCOM,COLL"),
    ),
    "ultraserver": (
        _from(6.15 * US, "s", "no UltraServer run: NeuronLink-v3 as inside an instance"),
        _from(30.0 * G, "B/s", "no UltraServer run: NeuronLink-v3 as inside an instance"),
    ),
    "ultraserver:reduce": (
        _from(101.5 * US, "s", "no UltraServer run: NeuronLink-v3 as inside an instance"),
        _from(105.3 * G, "B/s", "no UltraServer run: NeuronLink-v3 as inside an instance"),
    ),
}
_T3 = {
    "core": (
        _from(16.3 * US, "s", "no Trn3 run: Trn2's"),
        _from(43 * G, "B/s", "Trn2's 30 GB/s x 528/368 (DMA per core [DMA])", "NCCOM,DMA"),
    ),
    "chip": (
        _from(6.15 * US, "s", "no Trn3 run: Trn2's"),
        _from(75 * G, "B/s", "Trn2's 30 GB/s x 2.5 (NeuronLink 2.56 vs 1.024 TB/s)", "NCCOM,T3"),
    ),
    "chip:reduce": (
        _from(101.5 * US, "s", "no Trn3 run: Trn2's"),
        _from(
            263 * G, "B/s", "Trn2's 105.3 GB/s x 2.5 (NeuronLink 2.56 vs 1.024 TB/s)", "NCCOM,T3"
        ),
    ),
    "instance": _T2["instance"],
}

#: {generation: {level: (fixed seconds, achieved bus bandwidth)}}; levels: "core" (cores of a
#: chip), "chip" (chips of an instance), "instance" (instances over EFA), "ultraserver"; a
#: "<level>:reduce" entry, where present, is that level's fit for reductions (all-reduce,
#: reduce-scatter, reduce), the plain entry then being the data-movement fit.
COLLECTIVE_FIT: dict = {"trn1": _T1, "trn2": _T2, "trn3": _T3}


# --- instances ---------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class InstanceSpec:
    name: str
    generation: str
    chips: Fig
    vcpus: Fig
    host_memory: Fig
    efa_bw: Fig  # whole instance, bytes/s
    chip_topology: str
    price_usd_per_hour: Fig  # value None when no figure was found
    emulated: bool  # offered as TORCH_NEURONX_EMULATED_INSTANCE
    scaleup_link_bw_per_chip: Fig | None = None  # NeuronLink between instances (UltraServer)
    scaleup_max_instances: int = 1

    def __post_init__(self):
        chip(self.generation)  # a mistyped generation fails here, naming the valid ones

    @property
    def chip(self) -> ChipSpec:
        return chip(self.generation)


def _listed(
    name, generation, page, chips, vcpus, memory_gib, efa_gbps, efa_note, topology, price, **kw
) -> InstanceSpec:
    """An instance whose chips, vCPUs, host memory and EFA bandwidth its AWS page ``page``
    lists (a key of SOURCES)."""
    return InstanceSpec(
        name,
        generation,
        pub(chips, "chips", page),
        pub(vcpus, "vCPU", page),
        pub(memory_gib * GiB, "B", page),
        pub(efa_gbps * 1e9 / 8, "B/s", page, efa_note),
        topology,
        price,
        **kw,
    )


def _unlisted(name, generation, chips: Fig, efa_bw: Fig, topology, price) -> InstanceSpec:
    """An emulated instance size that AWS publishes no vCPU or host-memory figure for."""
    return InstanceSpec(
        name,
        generation,
        chips,
        Fig(None, "vCPU", "", "assumption", "not published"),
        Fig(None, "B", "", "assumption", "not published"),
        efa_bw,
        topology,
        price,
        emulated=True,
    )


def _price(usd_per_hour, source, note) -> Fig:
    return Fig(usd_per_hour, "USD/h", source, "third-party", note)


_NO_PRICE = _price(
    None, "", "no on-demand price published by AWS and no public figure found; pass your own"
)

# Two instances the table lists again with a difference (trn1n, trn2u).
_TRN1_32XL = _listed(
    "trn1.32xlarge",
    "trn1",
    page="TRN1I",
    chips=16,
    vcpus=128,
    memory_gib=512,
    efa_gbps=800,
    efa_note="800 Gbps EFA",
    topology="4D hypercube (NeuronLink-v2) [TRN1I]",
    price=_price(
        21.50, "USAGE,TRN1PRICE", "on-demand, us-east-1 (usage.ai, updated 2026-06-25; AWS 2023)"
    ),
    emulated=False,
)

_TRN2_48XL = _listed(
    "trn2.48xlarge",
    "trn2",
    page="TRN2I",
    chips=16,
    vcpus=192,
    memory_gib=2048,
    efa_gbps=3200,
    efa_note="EFAv3 3,200 Gbps",
    topology="4x4 2D torus (NeuronLink-v3) [TRN2I]",
    price=_price(
        14.56,
        "SPARECORES",
        "on-demand us-east-2, read 2026-09 via sparecores.com; "
        "sold through EC2 Capacity Blocks [CAPB]; 16 x trn2.3xlarge's $2.235 = $35.76 conflicts",
    ),
    emulated=True,
)

INSTANCES: dict[str, InstanceSpec] = {
    i.name: i
    for i in [
        _listed(
            "trn1.2xlarge",
            "trn1",
            page="TRN1I",
            chips=1,
            vcpus=8,
            memory_gib=32,
            efa_gbps=25,
            efa_note="up to 25 Gbps",
            topology="single chip",
            price=_price(
                1.34,
                "TRN1PRICE",
                "on-demand hourly rate in AWS's Neuron benchmark price table (2023 version)",
            ),
            emulated=False,
        ),
        _TRN1_32XL,
        # trn1.32xlarge with twice the EFA bandwidth
        dataclasses.replace(
            _TRN1_32XL,
            name="trn1n.32xlarge",
            efa_bw=pub(1600e9 / 8, "B/s", "TRN1I", "1600 Gbps EFA"),
            price_usd_per_hour=_price(
                24.78,
                "EC2PRICELIST",
                "on-demand, Linux, us-east-1, AWS Price List publication 2026-07-28 (read "
                "through a public audit of that list, which also gives trn1.32xlarge $21.50)",
            ),
        ),
        _unlisted(
            "trn2.3xlarge",
            "trn2",
            chips=Fig(
                1,
                "chips",
                "UNVERIFIED",
                "third-party",
                "a 1-chip size named in public benchmark write-ups and an "
                "AWS SDK changelog; no AWS spec page",
            ),
            efa_bw=assume(
                200e9 / 8, "B/s", "one chip's EFA share (200 Gbps per chip [COLL])", "COLL"
            ),
            topology="single chip",
            price=_price(
                2.235,
                "UNVERIFIED",
                "about $2.235/h (ap-southeast-4, May 2026) in public "
                "write-ups without a URL; one source says AWS publishes no list price",
            ),
        ),
        _TRN2_48XL,
        # trn2.48xlarge as one of the 4 instances of an UltraServer
        dataclasses.replace(
            _TRN2_48XL,
            name="trn2u.48xlarge",
            efa_bw=pub(3200e9 / 8, "B/s", "TRN2I"),
            chip_topology="4x4 2D torus; 3D torus across the 4 instances of an UltraServer "
            "[TRN2I, COLL]",
            price_usd_per_hour=_NO_PRICE,
            scaleup_link_bw_per_chip=pub(
                256 * G, "B/s", "TRN2I", "NeuronLink between the instances of an UltraServer"
            ),
            scaleup_max_instances=4,
        ),
        _unlisted(
            "trn3.3xlarge",
            "trn3",
            chips=Fig(
                1,
                "chips",
                "DRV",
                "assumption",
                "the driver names 3xlarge variants; customer availability unconfirmed",
            ),
            efa_bw=der(200e9 / 8, "B/s", "TRN3I", "one chip's share of UltraServer EFA"),
            topology="single chip",
            price=_NO_PRICE,
        ),
        _unlisted(
            "trn3.48xlarge",
            "trn3",
            chips=Fig(
                16,
                "chips",
                "DRV",
                "published",
                "16-device 'PDS' platform in the driver; customer availability unconfirmed",
            ),
            efa_bw=der(16 * 200e9 / 8, "B/s", "TRN3I", "16 chips x 200 Gbps"),
            topology="all-to-all through NeuronSwitch-v1 [TRN3I]",
            price=_NO_PRICE,
        ),
    ]
}


def instance(name: str) -> InstanceSpec:
    try:
        return INSTANCES[name]
    except KeyError:
        raise ValueError(f"unknown instance {name!r}; valid: {', '.join(INSTANCES)}") from None


def price_per_hour(name: str, override: float | None = None) -> float | None:
    """USD per hour for an instance: ``override`` when given (your negotiated or current price),
    else the best public figure in the table (see its ``note``), else None."""
    if override is not None:
        return float(override)
    return instance(name).price_usd_per_hour.value


# --- a logical core: what one `neuron:N` device is ------------------------------------------------
@dataclasses.dataclass(frozen=True)
class LogicalCore:
    """One logical NeuronCore (``lnc`` physical cores working as one) of ``chip``.

    Derived figures (all **derived**, by the rule the reference recommends: per-core figures
    times cores, so 8 x 79 = 632 BF16 TFLOPS per Trn2 chip rather than the chip page's 667):
    - tensor peak = physical-core peak x lnc;
    - HBM bandwidth = chip HBM bandwidth x lnc / physical cores, capped by the cores' DMA
      bandwidth (on Trn3 the DMA ceiling, 528 GB/s per core, is below the HBM share, 612);
    - element-wise engines: lnc engines of each kind (the two cores split the work)."""

    chip: ChipSpec
    lnc: int

    @property
    def generation(self) -> str:
        return self.chip.generation

    @property
    def core(self) -> CoreSpec:
        return self.chip.core

    def tensor_peak(self, dtype_class: str) -> float:
        peaks = self.core.tensor_peak
        fig = peaks.get(dtype_class) or peaks["bf16"]
        return float(fig) * self.lnc

    @functools.cached_property
    def hbm_capacity(self) -> int:
        return int(float(self.chip.hbm_capacity) * self.lnc // self.chip.physical_cores)

    @functools.cached_property
    def hbm_bw_share(self) -> float:
        return float(self.chip.hbm_bw) * self.lnc / self.chip.physical_cores

    @functools.cached_property
    def dma_bw(self) -> float:
        return float(self.core.dma_bw) * self.lnc

    @functools.cached_property
    def hbm_bw(self) -> float:
        return min(self.hbm_bw_share, self.dma_bw)

    @functools.cached_property
    def sbuf(self) -> int:
        return int(float(self.core.sbuf)) * self.lnc

    @functools.cached_property
    def psum(self) -> int:
        return int(float(self.core.psum)) * self.lnc

    @functools.cached_property
    def cores_per_chip(self) -> int:
        return self.chip.physical_cores // self.lnc


def logical_core(generation: str, lnc: int | None = None) -> LogicalCore:
    spec = chip(generation)
    lnc = int(float(spec.default_lnc)) if lnc is None else int(lnc)
    if lnc not in spec.lnc_allowed:
        raise ValueError(f"{spec.chip_name} supports LNC {spec.lnc_allowed}, not {lnc}")
    return LogicalCore(spec, lnc)


# --- a target: which hardware a process (or a projection) is on ----------------------------------
@dataclasses.dataclass(frozen=True)
class Target:
    """An instance and one logical core of it: what one ``neuron:N`` device is.

    The one hardware description every layer reads: ``topology.current().target`` is the
    emulated one (the allocator's capacity, the performance model and the NKI simulator all
    read that object); a report's profiles are other targets, each with a price."""

    instance: InstanceSpec
    core: LogicalCore

    @property
    def generation(self) -> str:
        return self.instance.generation

    @property
    def lnc(self) -> int:
        return self.core.lnc

    @property
    def cores_per_chip(self) -> int:
        return self.core.cores_per_chip

    @property
    def cores_per_instance(self) -> int:
        return int(float(self.instance.chips)) * self.cores_per_chip


def target(instance_name: str, lnc: int | None = None) -> Target:
    """The target of instance ``instance_name`` at ``lnc`` (default: its chip's default LNC)."""
    spec = instance(instance_name)
    return Target(spec, logical_core(spec.generation, lnc))


def emulated_instances() -> list[InstanceSpec]:
    return [i for i in INSTANCES.values() if i.emulated]


def table_rows(generation: str, lnc: int | None = None) -> list[tuple[str, str, str]]:
    """(figure, value, source) rows describing one generation: physical core, logical core
    under ``lnc`` and chip. Used by ``torch-neuronx info`` and the docs."""
    lc = logical_core(generation, lnc)
    chip, core = lc.chip, lc.core
    rows: list[tuple[str, str, str]] = []

    def add(label, fig: Fig, scale=1.0, unit=""):
        if fig.value is None:
            rows.append((label, "unknown", fig.note))
        else:
            rows.append((label, f"{fig.value / scale:,.4g} {unit}".strip(), fig.cite()))

    def derived(label, value, scale, unit, how):  # a logical-core figure: our arithmetic
        rows.append(
            (
                f"logical core (LNC={lc.lnc}) {label}",
                f"{value / scale:,.4g} {unit}",
                f"derived: {how}",
            )
        )

    for dt, fig in core.tensor_peak.items():
        add(f"{core.name} TensorE {dt} peak", fig, T, "TFLOP/s")
    add(f"{core.name} TensorE clock", core.tensor_clock, G, "GHz")
    add(f"{core.name} VectorE clock", core.vector_clock, G, "GHz")
    add(f"{core.name} ScalarE clock", core.scalar_clock, G, "GHz")
    add(f"{core.name} GpSimdE clock", core.gpsimd_clock, G, "GHz")
    add(f"{core.name} VectorE FP32", core.vector_fp32_flops, T, "TFLOP/s")
    add(f"{core.name} ScalarE FP32", core.scalar_fp32_flops, T, "TFLOP/s")
    add(f"{core.name} SBUF", core.sbuf, MiB, "MiB")
    add(f"{core.name} PSUM", core.psum, MiB, "MiB")
    add(f"{core.name} DMA bandwidth", core.dma_bw, G, "GB/s")
    share = f"{lc.lnc}/{chip.physical_cores}"
    derived("TensorE bf16 peak", lc.tensor_peak("bf16"), T, "TFLOP/s", f"{lc.lnc} x physical")
    derived("HBM", lc.hbm_capacity, GiB, "GiB", f"chip HBM x {share}")
    derived("HBM bandwidth", lc.hbm_bw, G, "GB/s", f"min(chip bw x {share}, DMA x {lc.lnc})")
    derived("SBUF", lc.sbuf, MiB, "MiB", f"{lc.lnc} x physical")

    add(f"{chip.chip_name} physical cores", Fig(chip.physical_cores, "", chip.source))
    for dt, fig in chip.peak.items():
        add(f"{chip.chip_name} {dt} peak (chip)", fig, T, "TFLOP/s")
    add(f"{chip.chip_name} HBM", chip.hbm_capacity, GiB, "GiB")
    add(f"{chip.chip_name} HBM bandwidth", chip.hbm_bw, T, "TB/s")
    add(f"{chip.chip_name} DMA bandwidth", chip.dma_bw, T, "TB/s")
    add(f"{chip.chip_name} NeuronLink (intra-instance)", chip.neuronlink_bw, G, "GB/s")
    add(f"{chip.chip_name} EFA per chip", chip.efa_bw_per_chip, G, "GB/s")
    add(f"{chip.chip_name} host link", chip.host_link_bw, G, "GB/s")
    add("hop latency, cores of a chip", chip.on_chip_latency, US, "us")
    add("hop latency, chips of an instance", chip.neuronlink_latency, US, "us")
    add("hop latency, instances (EFA)", chip.efa_latency, US, "us")
    add("host transfer latency", chip.host_link_latency, US, "us")
    return rows
