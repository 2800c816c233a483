"""Legacy NKI indexing: ``tensor[i * 128 + ix, iy]`` with ``nl.arange``/``nl.mgrid``
expressions gives an :class:`IndexedTensor`, read and written through element positions
(gather/scatter), or through a strided view when the expressions are rectangular."""

from __future__ import annotations

import torch

from .errors import fail
from .indexing import Idx, host
from .tensor_base import BaseView, TensorBase


class IndexedTensor(BaseView):
    """``tensor[idx, ...]`` with ``nl.arange``/``nl.mgrid`` expressions (legacy NKI indexing):
    the element at each point of the index grid.

    When every expression is an arithmetic progression along its own axis (the usual
    ``i * 128 + ix``), the in-bounds part is a rectangle: a strided view of the storage, read
    and written directly. Other expressions go through element positions (gather/scatter)."""

    __slots__ = ("base", "index", "shape", "_pos", "_oob", "_fs", "_rect")

    @classmethod
    def make(cls, base, key) -> IndexedTensor:
        key = tuple(
            _tile_index(base, d, k) if isinstance(k, TensorBase) else k for d, k in enumerate(key)
        )
        with host():
            return cls._make(base, key)

    @classmethod
    def _make(cls, base, key) -> IndexedTensor:
        if any(k is Ellipsis or isinstance(k, slice) for k in key):
            fail(
                "mixing nl.arange/nl.mgrid index expressions with slices or '...' is not "
                "supported; index every dim with an expression or an integer"
            )
        if len(key) != base.ndim:
            fail(f"{len(key)} index expressions for a {base.ndim}-D tensor of shape {base.shape}")
        idx = [k.t if isinstance(k, Idx) else torch.tensor(int(k)) for k in key]
        shape = torch.broadcast_shapes(*[i.shape for i in idx])
        if len(shape) < 2 and base.buffer.on_chip:
            shape = (1,) * (2 - len(shape)) + tuple(shape)
        t = object.__new__(cls)
        t.base = base
        t.index = idx
        t.shape = tuple(int(s) for s in shape)
        t._pos = None
        t._oob = None
        t._fs = None
        t._rect = _rectangle(base, idx, t.shape)
        return t

    def __repr__(self) -> str:
        return f"IndexedTensor(shape={self.shape}, of {self.base!r})"

    def __getitem__(self, key):
        fail("an indexed tensor cannot be indexed again; index the tensor once")

    def _positions(self):
        if self._pos is None:
            b = self.base
            nd = len(self.shape)
            pos = torch.full(self.shape, b.offset, dtype=torch.int64)
            oob = torch.zeros(self.shape, dtype=torch.bool)
            for d, i in enumerate(self.index):
                if i.dim() < nd:
                    i = i.reshape((1,) * (nd - i.dim()) + tuple(i.shape))
                pos = pos + i * b.strides[d]
                oob = oob | (i < 0) | (i >= b.shape[d])
            self._pos, self._oob = pos, oob
        return self._pos, self._oob

    def _oob_error(self):
        for d, i in enumerate(self.index):
            if bool(((i < 0) | (i >= self.base.shape[d])).any()):
                lo, hi = int(i.min()), int(i.max())
                fail(
                    f"index expression on dim {d} spans [{lo}, {hi}] but the dim has size "
                    f"{self.base.shape[d]} (tensor shape {self.base.shape}): out-of-bounds "
                    f"access without a mask; pass mask=(expr < {self.base.shape[d]})"
                )
        fail("out-of-bounds access without a mask")

    def check_bounds(self, mask):
        rect = self._rect
        if rect is not None:
            view, slices, full, _ = rect
            if full:
                return
            if mask is None:
                self._oob_error()
            outside = mask.clone()
            outside[slices] = False
            if bool(outside.any()):
                self._oob_error()
            return
        pos, oob = self._positions()
        bad = oob if mask is None else (oob & mask)
        if bool(bad.any()):
            self._oob_error()

    def read(self, mask=None) -> torch.Tensor:
        self.base.storage.materialize()
        self.check_bounds(mask)
        rect = self._rect
        if rect is not None:
            view, slices, full, flips = rect
            if flips:
                view = view.flip(flips)
            if full:
                return view
            out = torch.zeros(self.shape, dtype=view.dtype)
            out[slices] = view
            return out
        pos, oob = self._positions()
        if mask is not None or bool(oob.any()):
            pos = torch.where(oob, torch.zeros_like(pos), pos)
        return self.base.flat[pos]

    def write(self, value, mask=None):
        self.base.storage.materialize()
        self.check_bounds(mask)
        flat = self.base.flat
        v = value if isinstance(value, torch.Tensor) else torch.tensor(value)
        v = torch.broadcast_to(v.to(flat.dtype), self.shape)
        rect = self._rect
        if rect is not None:
            view, slices, full, flips = rect
            part = v if full else v[slices]
            m = None if mask is None else (mask if full else mask[slices])
            if flips:
                part = part.flip(flips)
                m = None if m is None else m.flip(flips)
            view.copy_(part if m is None else torch.where(m, part, view))
            return
        pos, oob = self._positions()
        sel = ~oob if mask is None else (mask & ~oob)
        sel = torch.broadcast_to(sel, self.shape)
        flat.index_put_((pos[sel],), v[sel])


def _tile_index(base, d: int, tile) -> Idx:
    """An on-chip ``(P, 1)`` integer tile in an index key (``hbm[b, rows_tile, i_f]`` in old
    kernels): the rows of each partition are read from the tile, an indirect DMA gather or
    scatter on dim ``d`` (the old compiler's DGE form of ``vector_offset=``). The values are
    read when the tensor is indexed; out-of-range values need the access's ``mask=``."""
    from .dynamic import check_index_tile

    what = f"indexing dim {d} of a tensor of shape {base.shape} with a tile of indices"
    if base.buffer.on_chip:
        fail(
            f"{what}: only HBM tensors take an index tile (indirect DMA); on-chip tensors "
            f"are indexed with nl.arange/nl.mgrid or use nisa tensor indirection (.ap)"
        )
    check_index_tile(what, tile)
    if tile.free_size != 1:
        fail(
            f"{what}: the tile must be (P, 1) (one index per partition), got shape "
            f"{tuple(tile.shape)}; split it into (P, 1) columns"
        )
    values = tile.read()
    if values.device.type == "meta":
        fail(f"{what}: index values are unknown while tracing shapes; run the kernel eagerly")
    with host():
        return Idx(values.reshape(tile.shape[0], 1).to(torch.int64).cpu())


def _progression(i: torch.Tensor, nd: int):
    """(output axis or None, start, step, count) when ``i`` is an arithmetic progression along
    one axis of the index grid (or a constant), else None."""
    if i.dim() < nd:
        i = i.reshape((1,) * (nd - i.dim()) + tuple(i.shape))
    axes = [a for a, n in enumerate(i.shape) if n > 1]
    if not axes:
        return (None, int(i.reshape(-1)[0]) if i.numel() else 0, 0, 1)
    if len(axes) > 1:
        return None
    v = i.reshape(-1)
    step = int(v[1] - v[0])
    if step == 0 or not bool((v[1:] - v[:-1] == step).all()):
        return None
    return (axes[0], int(v[0]), step, v.numel())


def _rectangle(base, idx, shape):
    """(in-bounds strided view, its slices in the index grid, covers everything, axes the view
    runs backwards on) or None."""
    nd = len(shape)
    offset = base.offset
    axis_of = {}
    size = list(shape)
    strides = [0] * nd
    slices = [slice(None)] * nd
    flips = []
    full = True
    for d, i in enumerate(idx):
        prog = _progression(i, nd)
        if prog is None:
            return None
        axis, start, step, count = prog
        n = base.shape[d]
        if axis is None:
            if not 0 <= start < n:
                return None  # a constant out of range: the general path reports it
            offset += start * base.strides[d]
            continue
        if axis in axis_of:
            return None
        axis_of[axis] = d
        # the k with 0 <= start + k * step < n: a contiguous run of the progression
        if step > 0:
            lo = max(0, -(start // step)) if start < 0 else 0
            hi = min(count, (n - 1 - start) // step + 1) if start <= n - 1 else 0
        else:
            lo = max(0, -((n - 1 - start) // -step)) if start > n - 1 else 0
            hi = min(count, start // -step + 1) if start >= 0 else 0
        if hi <= lo:
            return None
        if lo != 0 or hi != count:
            full = False
        size[axis] = hi - lo
        slices[axis] = slice(lo, hi)
        if step > 0:
            offset += (start + lo * step) * base.strides[d]
            strides[axis] = step * base.strides[d]
        else:  # torch views need positive strides: view from the low end, flipped on use
            offset += (start + (hi - 1) * step) * base.strides[d]
            strides[axis] = -step * base.strides[d]
            flips.append(axis)
    for a in range(nd):
        if a not in axis_of and shape[a] != 1:
            return None
    if base.flat.device.type == "meta":
        view = torch.empty(size, dtype=base.flat.dtype, device="meta")
    else:
        view = base.flat.as_strided(size, strides, offset)
    return view, tuple(slices), full, tuple(flips)
