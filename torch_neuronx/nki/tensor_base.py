"""What NKI's tensor classes share: shape metadata and Python's operators.

``a + b`` on NKI tensors is ``nl.add(a, b)``: one instruction. The operator functions live in
``nki.language``, whose modules import the tensor classes, so the tensor classes must not
import them back: each ``nki.language`` module registers its functions here when it loads
(``torch_neuronx.nki`` imports ``nki.language`` before any kernel can run).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from .storage import MemoryRegion

# name -> the nki.language function behind an operator or a legacy tile method
LANGUAGE: dict[str, Callable] = {}


def register_language(**functions: Callable) -> None:
    """Make nki.language functions available to the tensor operators (``add=nl.add``...)."""
    LANGUAGE.update(functions)


class TensorBase:
    """What NKI's tensor classes share: metadata and the arithmetic operators."""

    __slots__ = ()

    @property
    def buffer(self) -> MemoryRegion:
        return self.storage.buffer

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def partitions(self) -> int:
        return self.shape[0]

    @property
    def free_size(self) -> int:
        fs = self._fs
        if fs is None:
            fs = self._fs = math.prod(self.shape[1:])
        return fs

    def __iter__(self):
        raise TypeError("NKI tensors are not iterable; index them or loop over nl.affine_range")

    def __len__(self):
        return self.shape[0]

    def __bool__(self):
        raise TypeError(
            "the truth value of an NKI tensor is only known on the device; use "
            "nl.where / nisa.affine_select for data-dependent choices"
        )

    # elementwise operators: the nki.language functions (one instruction each)
    def __add__(self, o):
        return LANGUAGE["add"](self, o)

    def __radd__(self, o):
        return LANGUAGE["add"](o, self)

    def __iadd__(self, o):
        # ``t[k] += v``: a new sum tile that __setitem__ then copies (NKI 0.2+); the legacy
        # layer registers "iadd" for the old language's ``psum[...] += nisa.nc_matmul(...)``
        iadd = LANGUAGE.get("iadd")
        return iadd(self, o) if iadd is not None else LANGUAGE["add"](self, o)

    def __sub__(self, o):
        return LANGUAGE["subtract"](self, o)

    def __rsub__(self, o):
        return LANGUAGE["subtract"](o, self)

    def __mul__(self, o):
        return LANGUAGE["multiply"](self, o)

    def __rmul__(self, o):
        return LANGUAGE["multiply"](o, self)

    def __truediv__(self, o):
        return LANGUAGE["divide"](self, o)

    def __rtruediv__(self, o):
        return LANGUAGE["divide"](o, self)

    def __pow__(self, o):
        return LANGUAGE["power"](self, o)

    def __neg__(self):
        return LANGUAGE["negative"](self)

    def __abs__(self):
        return LANGUAGE["abs"](self)


class BaseView(TensorBase):
    """A view defined over another NKI tensor, ``base`` (indexed and dynamic views): its
    elements live in ``base``'s storage, with ``base``'s dtype and name."""

    __slots__ = ()

    @property
    def storage(self):
        return self.base.storage

    @property
    def dtype(self):
        return self.base.dtype

    @property
    def name(self):
        return self.base.name
