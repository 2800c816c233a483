"""NKI memory: the regions (SBUF, PSUM, HBM) and the storages (allocations) tensors view.

A :class:`Storage` is the memory (one flat torch tensor): for HBM, the device memory of a
neuron tensor seen through its host alias (no copy); for SBUF/PSUM, a host tensor laid out
partition-major (``partitions x elements-per-partition``).
"""

from __future__ import annotations

import enum

import torch

from . import dtypes
from .coverage import Coverage
from .errors import fail


class MemoryRegion(enum.Enum):
    """Memory region constants for NKI tensors."""

    sbuf = "sbuf"
    psum = "psum"
    private_hbm = "private_hbm"
    shared_hbm = "shared_hbm"

    @property
    def on_chip(self) -> bool:
        return self in (MemoryRegion.sbuf, MemoryRegion.psum)

    @property
    def is_hbm(self) -> bool:
        return not self.on_chip

    def __repr__(self) -> str:
        return f"nl.{self.value}"


def buffer_of(buffer) -> MemoryRegion:
    if isinstance(buffer, MemoryRegion):
        return buffer
    if isinstance(buffer, str):
        key = {"hbm": "private_hbm"}.get(buffer, buffer)
        try:
            return MemoryRegion(key)
        except ValueError:
            pass
    fail(
        f"{buffer!r} is not an NKI buffer; use nl.sbuf, nl.psum, nl.hbm (private_hbm) or "
        f"nl.shared_hbm"
    )


class Storage:
    """One allocation. On-chip storages carry their live range for the capacity rules."""

    __slots__ = (
        "buffer",
        "dtype",
        "flat",
        "partitions",
        "partition_elems",
        "name",
        "rec",
        "readonly",
        "owner",
        "arg_name",
        "mm_live",
        "mm_ever",
        "value_init",
        "ready",
        "release",
        "views",
        "pending",
        "cover",
        "shape",
        "strides",
        "__weakref__",
    )

    def __init__(
        self,
        buffer: MemoryRegion,
        dtype,
        flat: torch.Tensor,
        partitions: int = 0,
        partition_elems: int = 0,
        name: str = "",
        owner=None,
    ):
        self.buffer = buffer
        self.dtype = dtype
        self.flat = flat
        self.partitions = partitions
        self.partition_elems = partition_elems
        self.name = name
        self.rec = None  # on-chip: the tile's live-range record (kept after the storage dies)
        self.readonly = None  # "'x' of nki_op 'ns::op'" when writes are forbidden
        self.owner = owner  # the torch tensor that holds an HBM storage
        self.arg_name = ""
        psum = buffer is MemoryRegion.psum  # (only PSUM storages hold matmul state)
        self.mm_live = set() if psum else None  # PSUM: views in an open accumulation group
        self.mm_ever = set() if psum else None  # PSUM: views initialised by a matmul
        self.value_init = False  # PSUM: last written by a non-matmul instruction
        self.ready = 0.0  # modeled time its last write completes
        self.release = None  # returns an on-chip tile's memory to the allocator's pool
        self.views = None  # with ``release``: the torch views of that memory, by shape
        # the value not yet written into ``flat``: a new allocation's uninitialised pattern,
        # or the value of a memset of the whole tile (filled when first accessed, unless that
        # access overwrites all of it: no wasted pass)
        self.pending = None
        self.cover = None  # with ``pending``: the boxes written so far (nki/coverage.py)
        self.shape = self.strides = None  # of the allocation, while ``pending``

    def __del__(self):
        release = self.release
        if release is not None:
            try:
                release(self.flat, self.views)
            except Exception:  # interpreter shutdown: the pool may already be gone
                pass

    def leave_unfilled(self, shape: tuple, strides: tuple) -> None:
        """Make the uninitialised pattern pending on this new allocation of ``shape``
        (contiguous ``strides``): it is written at the first access that is not a recorded
        write, where no such write landed (see nki/coverage.py)."""
        self.pending = dtypes.uninit_value(self.dtype)
        self.shape = shape
        self.strides = strides

    def materialize(self) -> None:
        """Write the pending value (pattern or memset) where nothing was written yet (before any
        read or unrecorded write)."""
        v = self.pending
        if v is not None:
            self.pending = None
            cover, self.cover = self.cover, None
            if cover is None:
                self.flat.fill_(v)
            else:
                cover.fill_rest(self.flat, v)

    def note_write(self, view) -> bool:
        """Record that the plain view ``view`` of this storage (pattern pending) is about to
        be written in full, reading none of it: True when recorded (the write may skip the
        pattern), False when the pattern must be written first."""
        shape = self.shape
        if shape is None or view.flat is not self.flat:
            return False  # no record kept / a dtype-reinterpreting view
        if not view.offset and view.shape == shape and view.strides == self.strides:
            self.pending = self.cover = None  # the whole allocation, in order
            return True
        cover = self.cover
        if cover is None:
            cover = self.cover = Coverage(shape, self.strides)
        box = cover.box(view.shape, view.strides, view.offset)
        if box is None:
            return False
        if cover.add(box):
            self.pending = self.cover = None  # every element written: nothing to fill
        return True

    @property
    def bytes_per_partition(self) -> int:
        return self.partition_elems * dtypes.itemsize(self.dtype)

    def describe(self) -> str:
        label = self.name or (self.arg_name and f"argument '{self.arg_name}'") or "tile"
        return label


def contiguous_strides(shape) -> tuple:
    strides = []
    acc = 1
    for s in reversed(shape):
        strides.insert(0, acc)
        acc *= s
    return tuple(strides)
