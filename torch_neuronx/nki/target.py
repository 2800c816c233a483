"""The NeuronCore a kernel is simulated for: its tile limits and on-chip memory sizes.

A :class:`CoreTarget` is a view of the process's one hardware description,
``topology.current().target.core`` (``torch_neuronx.runtime.hardware.LogicalCore``): the
generation, its NeuronCore version and capacities, and the LNC the cost model schedules on,
are read from the very object the allocator and the performance model read. An instance the
table does not know is an error naming the valid ones (raised by the topology), never a
fallback to another chip. The tile limits are the NKI ISA's published rules:

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
from typing import ClassVar

from torch_neuronx.runtime import hardware, topology

KiB = 1024


@dataclasses.dataclass(frozen=True, eq=False)  # a view: compared by identity
class CoreTarget:
    """The NKI view of one logical core: capacities per partition of one physical core."""

    core: hardware.LogicalCore  # topology.current().target.core for the running process

    # The NKI ISA's tile rules (the same on every generation so far).
    pmax: ClassVar[int] = 128
    psum_bank_bytes: ClassVar[int] = 2 * KiB
    gemm_stationary_fmax: ClassVar[int] = 128
    gemm_moving_fmax: ClassVar[int] = 512  # the default tile rule (one PSUM bank of fp32)
    gemm_moving_fmax_v4_fp32: ClassVar[int] = 4096
    gemm_moving_fmax_v4_bf16: ClassVar[int] = 8192
    bn_stats_fmax: ClassVar[int] = 512
    vector_transpose_max: ClassVar[int] = 32

    @property
    def generation(self) -> str:  # "trn2" | "trn3"
        return self.core.generation

    @property
    def core_name(self) -> str:  # "NeuronCore-v3"
        return self.core.core.name

    @property
    def nc_version(self) -> int:  # 3 (gen3 / Trn2) or 4 (gen4 / Trn3)
        return self.core.core.version

    @property
    def lnc(self) -> int:  # physical cores the SPMD programs of one launch are placed on
        return self.core.lnc

    @functools.cached_property
    def sbuf_partition_bytes(self) -> int:
        return int(float(self.core.core.sbuf)) // self.pmax

    @functools.cached_property
    def psum_partition_bytes(self) -> int:
        return int(float(self.core.core.psum)) // self.pmax

    @functools.cached_property
    def psum_banks(self) -> int:
        return self.psum_partition_bytes // self.psum_bank_bytes

    @property
    def label(self) -> str:
        return f"{self.generation.capitalize()} {self.core_name}"

    def moving_fmax(self, dst_dtype_bits: int) -> int:
        if self.nc_version >= 4:
            if dst_dtype_bits == 16:
                return self.gemm_moving_fmax_v4_bf16
            return self.gemm_moving_fmax_v4_fp32
        return self.gemm_moving_fmax


_view: CoreTarget | None = None  # the view of the current core, kept while the core is the same


def current() -> CoreTarget:
    """The core of the emulated instance (``topology.current()``); no fallback: an instance
    the table does not know raises, naming the valid ones."""
    global _view
    core = topology.current().target.core
    view = _view
    if view is None or view.core is not core:
        view = _view = CoreTarget(core)
    return view


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
