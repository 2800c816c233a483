"""The NeuronCore a kernel is simulated for: its tile limits and on-chip memory sizes.

The generation follows the emulated instance profile (Trn2: NeuronCore-v3, Trn3:
NeuronCore-v4). Capacities come from the hardware table (``torch_neuronx.runtime.hardware``,
each figure with its public source); tile limits are the NKI ISA's published rules:

- partition dimension <= 128 (``nl.tile_size.pmax``) [nki.language.tile_size];
- PSUM: 16 KiB per partition in 8 banks of 2 KiB (512 fp32 values) [Trainium/Inferentia2
  architecture guide];
- ``nc_matmul``: stationary free size <= 128, moving free size <= 512 on NeuronCore-v2/v3
  (one PSUM bank); on NeuronCore-v4 up to 4096 (fp32 output) or 8192 (bf16 output), i.e. all
  8 banks [nki.isa.nc_matmul];
- ``bn_stats``: free size <= 512 [nki.isa.bn_stats];
- Vector Engine ``nc_transpose``: at most 32x32 [nki.isa.nc_transpose].
"""

from __future__ import annotations

import dataclasses
import functools

from torch_neuronx.runtime import hardware

KiB = 1024


@dataclasses.dataclass(frozen=True)
class CoreTarget:
    generation: str  # "trn2" | "trn3"
    core_name: str  # "NeuronCore-v3"
    nc_version: int  # 3 (gen3 / Trn2) or 4 (gen4 / Trn3)
    pmax: int
    sbuf_partition_bytes: int
    psum_partition_bytes: int
    psum_bank_bytes: int
    psum_banks: int
    gemm_stationary_fmax: int
    gemm_moving_fmax: int  # the default tile rule (one PSUM bank of fp32)
    gemm_moving_fmax_v4_fp32: int
    gemm_moving_fmax_v4_bf16: int
    bn_stats_fmax: int
    vector_transpose_max: int

    @property
    def label(self) -> str:
        return f"{self.generation.capitalize()} {self.core_name}"

    def moving_fmax(self, dst_dtype_bits: int) -> int:
        if self.nc_version >= 4:
            if dst_dtype_bits == 16:
                return self.gemm_moving_fmax_v4_bf16
            return self.gemm_moving_fmax_v4_fp32
        return self.gemm_moving_fmax


def _generation() -> str:
    """trn2 / trn3 from the emulated instance profile (trn2 when it cannot be read)."""
    try:
        from torch_neuronx.runtime import topology

        name = topology.current().profile.name
        return hardware.instance(name).generation
    except Exception:  # profile unreadable (e.g. an instance the table does not know)
        return "trn2"


@functools.cache
def for_generation(generation: str) -> CoreTarget:
    chip = hardware.CHIPS[generation]
    core = chip.core
    pmax = 128
    nc_version = {"NeuronCore-v2": 2, "NeuronCore-v3": 3, "NeuronCore-v4": 4}[core.name]
    psum_bytes = int(float(core.psum)) // pmax
    return CoreTarget(
        generation=generation,
        core_name=core.name,
        nc_version=nc_version,
        pmax=pmax,
        sbuf_partition_bytes=int(float(core.sbuf)) // pmax,
        psum_partition_bytes=psum_bytes,
        psum_bank_bytes=2 * KiB,
        psum_banks=psum_bytes // (2 * KiB),
        gemm_stationary_fmax=128,
        gemm_moving_fmax=512,
        gemm_moving_fmax_v4_fp32=4096,
        gemm_moving_fmax_v4_bf16=8192,
        bn_stats_fmax=512,
        vector_transpose_max=32,
    )


def current() -> CoreTarget:
    return for_generation(_generation())


class TileSize:
    """``nl.tile_size``: hardware tile size constants of the emulated NeuronCore."""

    @property
    def pmax(self) -> int:
        return current().pmax

    @property
    def psum_fmax(self) -> int:  # deprecated name in NKI 0.4+, kept for older kernels
        return current().psum_bank_bytes // 4

    @property
    def psum_bank_fmax(self) -> int:
        return current().psum_bank_bytes // 4

    @property
    def psum_bank_fmax_bytes(self) -> int:
        return current().psum_bank_bytes

    @property
    def psum_fmax_bytes(self) -> int:
        return current().psum_bank_bytes

    @property
    def psum_num_banks(self) -> int:
        return current().psum_banks

    @property
    def sbuf_size_bytes(self) -> int:
        t = current()
        return t.sbuf_partition_bytes * t.pmax

    @property
    def sbuf_fmax(self) -> int:
        return current().sbuf_partition_bytes // 4

    @property
    def sbuf_fmax_bytes(self) -> int:
        return current().sbuf_partition_bytes

    @property
    def total_available_sbuf_size(self) -> int:  # per partition, despite the name (AWS docs)
        return current().sbuf_partition_bytes

    @property
    def gemm_stationary_fmax(self) -> int:
        return current().gemm_stationary_fmax

    @property
    def gemm_moving_fmax(self) -> int:
        return current().gemm_moving_fmax

    @property
    def bn_stats_fmax(self) -> int:
        return current().bn_stats_fmax

    def __repr__(self) -> str:
        t = current()
        return (
            f"tile_size({t.label}: pmax={t.pmax}, psum_bank_fmax={self.psum_bank_fmax}, "
            f"psum_num_banks={t.psum_banks}, sbuf_fmax_bytes={t.sbuf_partition_bytes}, "
            f"gemm_stationary_fmax={t.gemm_stationary_fmax}, "
            f"gemm_moving_fmax={t.gemm_moving_fmax})"
        )


tile_size = TileSize()
