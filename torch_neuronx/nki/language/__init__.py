"""``nki.language`` (``nl``): NKI's high-level language, simulated on the emulated NeuronCore.

Names and signatures follow AWS's NKI 0.7 API (Neuron 2.33). Every operation lowers to the
``nki.isa`` instructions a compiler would issue, so costs and hardware rules apply to it.
"""

from __future__ import annotations

from .. import dtypes as _dt
from ..grid import nc, spmd_dim  # noqa: F401 - launch-grid core placement
from ..indexing import Mask, arange, ds, mgrid  # noqa: F401
from ..ops import OPS as _OPS
from ..storage import MemoryRegion
from ..target import tile_size  # noqa: F401
from ..tensor import NkiTensor  # noqa: F401
from .control import (  # noqa: F401 - the nki.language API
    affine_range,
    device_print,
    dynamic_range,
    fori_loop,
    no_reorder,
    num_programs,
    program_id,
    program_ndim,
    sequential_range,
    static_range,
    while_loop,
)
from .creation import (  # noqa: F401 - the nki.language API
    broadcast_to,
    empty_like,
    expand_dims,
    full,
    ndarray,
    ones,
    rand,
    random_seed,
    shared_constant,
    shared_identity_matrix,
    zeros,
    zeros_like,
)
from .math import dropout, gather_flattened, mean, prod, rms_norm, softmax, var, where  # noqa: F401
from .memory import load, load_transpose2d, matmul, store, transpose  # noqa: F401

# data types
bool_ = _dt.bool_
int8, int16, int32 = _dt.int8, _dt.int16, _dt.int32
uint8, uint16, uint32 = _dt.uint8, _dt.uint16, _dt.uint32
float16, float32, bfloat16, tfloat32 = _dt.float16, _dt.float32, _dt.bfloat16, _dt.tfloat32
float8_e4m3, float8_e4m3fn, float8_e5m2 = _dt.float8_e4m3, _dt.float8_e4m3fn, _dt.float8_e5m2
float8_e8m0fnu = _dt.float8_e8m0fnu
float8_e5m2_x4, float8_e4m3fn_x4, float4_e2m1fn_x4 = (
    _dt.float8_e5m2_x4,
    _dt.float8_e4m3fn_x4,
    _dt.float4_e2m1fn_x4,
)

# memory regions
sbuf = MemoryRegion.sbuf
psum = MemoryRegion.psum
private_hbm = MemoryRegion.private_hbm
hbm = MemoryRegion.private_hbm
shared_hbm = MemoryRegion.shared_hbm


def is_hbm(buffer) -> bool:
    return MemoryRegion(getattr(buffer, "value", buffer)).is_hbm


def is_on_chip(buffer) -> bool:
    return MemoryRegion(getattr(buffer, "value", buffer)).on_chip


def is_psum(buffer) -> bool:
    return MemoryRegion(getattr(buffer, "value", buffer)) is MemoryRegion.psum


def is_sbuf(buffer) -> bool:
    return MemoryRegion(getattr(buffer, "value", buffer)) is MemoryRegion.sbuf


class NKIObject:
    """Base class of NKI kernel dataclasses (plain Python objects in the simulator)."""

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)


# operators and functions: one object per name (nl.exp(x) and op=nl.exp)
for _name, _op in _OPS.items():
    if _name not in ("sum", "mean", "prod", "var", "all"):
        globals()[_name] = _op
max = _OPS["max"]  # noqa: A001 - NKI's names
min = _OPS["min"]  # noqa: A001
sum = _OPS["sum"]  # noqa: A001
all = _OPS["all"]  # noqa: A001
copy = _OPS["copy"]
abs = _OPS["abs"]  # noqa: A001
del _name, _op


def par_dim(n):
    """Removed in NKI 0.2 (block dimensions); an error naming the replacement."""
    from ..errors import fail

    fail(
        f"nl.par_dim({n}) is the neuronxcc.nki (pre-0.2) block-dimension API, removed in NKI 0.2: "
        f"put the partition dim first, (P, blocks..., free...) instead of (blocks..., "
        f"nl.par_dim(P), free...) (AWS's NKI Block Dimension Migration Guide), or run the "
        f"kernel unchanged with torch_neuronx.nki.legacy"
    )
