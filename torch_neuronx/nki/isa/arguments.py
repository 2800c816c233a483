"""The instruction arguments every instruction family shares: ``engine=`` and ``mask=``."""

from __future__ import annotations

from torch_neuronx.runtime.engines import CORE_ENGINES

from ..errors import fail
from ..indexing import mask_tensor
from .enums import engine


def engine_name(e, default: str) -> str:
    """The engine an instruction's ``engine=`` names (an Engine, a str), ``default`` for none."""
    if e is None or e is engine.unknown:
        return default
    if not isinstance(e, engine) or e not in CORE_ENGINES:
        fail(f"engine={e!r} is not an nki.isa.engine value of a NeuronCore engine")
    return e


def mask_of(mask, x):
    return None if mask is None else mask_tensor(mask, x.shape)
