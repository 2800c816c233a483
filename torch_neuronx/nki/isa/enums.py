"""NKI's ISA enums (``nisa.engine``, ``nisa.reduce_cmd``, ...) and the NeuronCore version."""

from __future__ import annotations

import enum

from torch_neuronx.runtime.engines import Engine

# Neuron Device engines: NKI's ``nisa.engine`` is the runtime's one engine enum (its members'
# values are their names, "tensor", "vector", ...; instructions accept only CORE_ENGINES).
engine = Engine

tensor_engine, vector_engine, scalar_engine, gpsimd_engine, unknown_engine = (
    engine.tensor,
    engine.vector,
    engine.scalar,
    engine.gpsimd,
    engine.unknown,
)


class reduce_cmd(enum.Enum):
    """Engine accumulator register commands."""

    idle = 0
    reset = 1
    reduce = 2
    reset_reduce = 3
    load_reduce = 4


class dge_mode(enum.Enum):
    unknown = 0
    swdge = 1
    hwdge = 2
    none = 3


class oob_mode(enum.Enum):
    error = 0
    skip = 1


class matmul_perf_mode(enum.Enum):
    none = "none"
    double_row = "double_row"


class nc_version(enum.IntEnum):
    """Ordered, as kernels compare them (``get_nc_version() >= nc_version.gen3``)."""

    gen2 = 2
    gen3 = 3
    gen4 = 4


class dma_engine(enum.Enum):
    dma = 1
    gpsimd_dma = 2


def get_nc_version() -> nc_version:
    """The NeuronCore version of the emulated instance (gen3: Trn2, gen4: Trn3)."""
    from .. import target

    return nc_version(target.current().nc_version)


def get_nc_sub_version() -> int:
    return 0
