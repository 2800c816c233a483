"""Allocation of NKI tensors in SBUF, PSUM and HBM.

On-chip tiles are host tensors (never device HBM) filled with the uninitialised pattern (NaN,
or 0xA5 bytes for integers) so that a read before a write shows; the fill is deferred to the
first access that is not a plain write, and goes only where no write landed before it
(nki/coverage.py): a tile or output written in full is never filled. HBM tensors a kernel
creates are device memory of the kernel's neuron device: a neuron tensor (direct call), or,
inside the eager/compiled path of an ``nki_op``, host memory routed to the device pool that
the caller adopts as a neuron tensor without a copy. In ``shared_hbm`` every SPMD program
gets the same tensor (the i-th allocation of each program is the i-th of program 0).
"""

from __future__ import annotations

import math

import torch

from . import dtypes, errors, execution
from ._device import routed
from .errors import NkiCapacityError, fail
from .storage import MemoryRegion, Storage, buffer_of, contiguous_strides
from .tensor import NkiTensor


class TileRecord:
    """Live range and identity of an on-chip tile (outlives the tile's memory)."""

    __slots__ = (
        "buffer",
        "name",
        "bytes",
        "banks",
        "alloc_loc",
        "first",
        "first_loc",
        "last",
        "last_loc",
        "places",
    )

    def __init__(self, buffer, name, nbytes, banks, loc):
        self.buffer = buffer
        self.name = name
        self.bytes = nbytes
        self.banks = banks
        self.alloc_loc = loc
        self.first = -1
        self.first_loc = None
        self.last = -1
        self.last_loc = None
        self.places = None  # direct allocation: the tile's physical places (nki/placement.py)


class _TilePool:
    """Host memory of dead on-chip tiles, reused by the next tiles of the same size: a fresh
    allocation of a 128 x 512 tile costs page faults (~40 us) that dwarf its instructions.
    Each block keeps the whole-tile views made of it (shape -> torch view), so the next tile
    of the same shape gets its view without a new torch view per allocation."""

    def __init__(self, limit_bytes: int = 64 << 20):
        self.free = {}
        self.bytes = 0
        self.limit = limit_bytes

    def take(self, dtype, n: int) -> tuple:
        """(flat memory of ``n`` elements, its views by shape)."""
        lst = self.free.get((dtype, n))
        if lst:
            block = lst.pop()
            self.bytes -= block[0].numel() * block[0].element_size()
            return block
        return torch.empty(n, dtype=dtype), {}

    def give(self, t: torch.Tensor, views: dict) -> None:
        nbytes = t.numel() * t.element_size()
        if self.bytes + nbytes > self.limit:
            return
        self.free.setdefault((t.dtype, t.numel()), []).append((t, views))
        self.bytes += nbytes


_pool = _TilePool()


def _shape(shape) -> tuple:
    if isinstance(shape, int):
        shape = (shape,)
    try:
        out = tuple(int(s) for s in shape)
    except TypeError:
        fail(f"tensor shape must be a tuple of integers, got {shape!r}")
    if any(s <= 0 for s in out):
        fail(f"tensor shape {out} has a non-positive dim")
    return out


#: (shape, dtype, buffer as the kernel gave them, target) -> the checked on-chip tile kind
#: (``_tile_kind``): a kernel allocates a few kinds of tile over and over, so their rules are
#: checked once per kind (a failing allocation is never recorded: it raises every time)
_CHECKED: dict = {}


def ndarray(shape, dtype, buffer=MemoryRegion.sbuf, name: str = "") -> NkiTensor:
    ex = execution.current()
    key = None
    if shape.__class__ is tuple:
        key = (shape, dtype, buffer, ex.target)
        try:
            kind = _CHECKED.get(key)
        except TypeError:  # something unhashable: the checks below say what is wrong
            kind = key = None
        if kind is not None:
            return _on_chip(ex, kind, name)
    buf = buffer_of(buffer)
    shape = _shape(shape)
    dtype = dtypes.normalize(dtype)
    if buf.on_chip:
        kind = _tile_kind(ex.target, shape, dtype, buf, name)
        if key is not None:
            if len(_CHECKED) > 4096:  # kernels made on the fly (tests): keep it small
                _CHECKED.clear()
            _CHECKED[key] = kind
        return _on_chip(ex, kind, name)
    return _hbm(ex, shape, dtype, buf, name)


def _tile_kind(t, shape, dtype, buf, name) -> tuple:
    """The rules of an on-chip tile of ``shape`` and ``dtype`` on target ``t``: (shape,
    dtype, buffer, partitions, free elements, bytes per partition, PSUM banks, storage dtype,
    strides)."""
    if len(shape) < 2:
        fail(
            f"an {buf.value.upper()} tensor is at least 2-D (partition dim, free dims...); got "
            f"shape {shape}. Use ({shape[0]}, 1) for a column"
        )
    p = shape[0]
    if p > t.pmax:
        label = f"{name!r} " if name else ""
        fail(
            f"partition dimension {p} of {buf.value.upper()} tensor {label}of shape {shape} "
            f"exceeds the {t.pmax} partitions of the NeuronCore (nl.tile_size.pmax={t.pmax}); "
            f"tile the partition dim into chunks of at most {t.pmax}"
        )
    free = math.prod(shape[1:])
    nbytes = free * dtypes.itemsize(dtype)
    if buf is MemoryRegion.sbuf:
        if nbytes > t.sbuf_partition_bytes:
            fail(
                f"SBUF tensor shape {shape} ({dtypes.name(dtype)}) needs {nbytes} bytes per "
                f"partition, more than the {t.sbuf_partition_bytes} bytes of one SBUF partition "
                f"({t.label})",
                NkiCapacityError,
            )
        banks = 0
    else:
        if nbytes > t.psum_partition_bytes:
            fail(
                f"PSUM tensor shape {shape} ({dtypes.name(dtype)}) needs {nbytes} bytes per "
                f"partition, more than the {t.psum_partition_bytes} bytes of one PSUM partition "
                f"({t.psum_banks} banks x {t.psum_bank_bytes} bytes, {t.label})",
                NkiCapacityError,
            )
        banks = -(-nbytes // t.psum_bank_bytes)
    sd = dtypes.storage_dtype(dtype)
    return (shape, dtype, buf, p, free, nbytes, banks, sd, contiguous_strides(shape))


def _on_chip(ex, kind, name) -> NkiTensor:
    shape, dtype, buf, p, free, nbytes, banks, sd, strides = kind
    if ex.abstract:
        flat = torch.empty(p * free, dtype=sd, device="meta")
    else:
        flat, views = _pool.take(sd, p * free)
    st = Storage(buf, dtype, flat, p, free, name)
    st.rec = TileRecord(buf, name, nbytes, banks, errors.here())
    ex.tiles.append(st.rec)
    t = object.__new__(NkiTensor)
    t._init(st, flat, dtype, shape, strides, 0, name)
    if not ex.abstract:
        st.release = _pool.give
        st.views = views
        v = views.get(shape)
        if v is None:
            v = views[shape] = flat.view(shape)
        t._t = v  # the whole tile's torch view (NkiTensor.tensor)
        st.leave_unfilled(shape, strides)  # the pattern goes where a read finds nothing written
    return t


def _fresh(st: Storage, shape, dtype) -> NkiTensor:
    t = object.__new__(NkiTensor)
    return t._init(st, st.flat, dtype, shape, contiguous_strides(shape), 0, st.name)


def _hbm(ex, shape, dtype, buf, name) -> NkiTensor:
    if buf is MemoryRegion.shared_hbm and ex.grid:
        i = ex.shared_cursor
        ex.shared_cursor += 1
        if i < len(ex.shared_hbm):
            prev = ex.shared_hbm[i]
            if prev.shape != shape or prev.dtype != dtype:
                fail(
                    f"SPMD program {ex.program_ids} allocates shared_hbm tensor #{i} as {shape} "
                    f"{dtypes.name(dtype)}, but program 0 allocated it as {prev.shape} "
                    f"{dtypes.name(prev.dtype)}; shared_hbm tensors must be the same in every "
                    f"program"
                )
            return prev
    sd = dtypes.storage_dtype(dtype)
    if ex.abstract:
        owner = torch.empty(shape, dtype=sd, device=ex.device)
        host = torch.empty(math.prod(shape), dtype=sd, device="meta")
    elif ex.route >= 0:
        with routed(ex.route):
            owner = torch.empty(shape, dtype=sd)
        host = owner.reshape(-1)
    else:
        from torch_neuronx.runtime.host import host_alias

        owner = torch.empty(shape, dtype=sd, device=ex.device)
        host = host_alias(owner).reshape(-1)
    st = Storage(buf, dtype, host, 0, 0, name, owner=owner)
    t = _fresh(st, shape, dtype)
    if not ex.abstract:
        # the pattern goes where a read finds nothing written, at the latest when the kernel
        # ends (Execution.fill_unwritten): no pass over an output the kernel writes in full
        st.leave_unfilled(shape, t.strides)
        ex.unfilled.append(st)
    if buf is MemoryRegion.shared_hbm and ex.grid:
        ex.shared_hbm.append(t)
    return t


def touch(ex, storage: Storage):
    rec = storage.rec
    if rec is not None:
        if rec.first < 0:
            rec.first = ex.counter
            rec.first_loc = ex.loc
        rec.last = ex.counter
        rec.last_loc = ex.loc
