"""NKI tensors: strided views over a storage in HBM, SBUF or PSUM.

An :class:`NkiTensor` is a view: ``shape``, ``strides`` and ``offset`` in elements over a
:class:`~.storage.Storage`, exactly NKI's model (``offset + sum(strides[k] * i_k)``). Views are
free; instructions read and write them as ``torch.as_strided`` views, so an instruction is one
vectorised torch operation.

Legacy index expressions (``nl.arange``/``nl.mgrid``, e.g. ``a[i * 128 + ix, iy]``) give an
:class:`~.indexed.IndexedTensor` (nki/indexed.py).
"""

from __future__ import annotations

import math

import torch

from . import dtypes
from .dynamic import (
    SCALAR,
    TENSOR_INDIRECT,
    TI_GROUP,
    TI_GROUP_TENSOR,
    VECTOR,
    DynamicTensor,
    check_index_tile,
    is_register,
)
from .errors import NkiUnsupportedError, fail
from .indexed import IndexedTensor
from .indexing import Idx
from .rearrange import rearranged
from .storage import MemoryRegion, Storage, buffer_of, contiguous_strides
from .tensor_base import LANGUAGE, TensorBase

__all__ = ["NkiTensor", "IndexedTensor", "DynamicTensor", "MemoryRegion", "Storage", "buffer_of"]


class NkiTensor(TensorBase):
    """NKI tensor: a strided view (``shape``, ``strides``, ``offset`` in elements) of a storage."""

    __slots__ = ("storage", "dtype", "flat", "shape", "strides", "offset", "name", "_t", "_fs")

    def __init__(self, shape, dtype, storage, buffer=None, name: str = ""):
        # public constructor (AWS signature): bind a contiguous view to an existing storage
        if not isinstance(storage, Storage):
            raise NkiUnsupportedError(
                "NkiTensor(shape, dtype, storage) needs a storage from an existing NkiTensor "
                "(t.storage); create new tensors with nl.ndarray"
            )
        shape = tuple(int(s) for s in shape)
        self._init(storage, storage.flat, dtype, shape, contiguous_strides(shape), 0, name)

    def _init(self, storage, flat, dtype, shape, strides, offset, name=""):
        self.storage = storage
        self.flat = flat
        self.dtype = dtype
        self.shape = shape
        self.strides = strides
        self.offset = offset
        self.name = name or storage.name
        self._t = None
        self._fs = None
        return self

    @classmethod
    def _view(cls, base: NkiTensor, shape, strides, offset, flat=None, dtype=None):
        t = object.__new__(cls)
        return t._init(
            base.storage,
            base.flat if flat is None else flat,
            base.dtype if dtype is None else dtype,
            tuple(shape),
            tuple(strides),
            int(offset),
            base.name,
        )

    def __repr__(self) -> str:
        n = f" '{self.name}'" if self.name else ""
        return (
            f"NkiTensor{n}(shape={self.shape}, dtype={dtypes.name(self.dtype)}, "
            f"buffer={self.buffer.value})"
        )

    # ---- values (used by instructions)
    @property
    def tensor(self) -> torch.Tensor:
        """The torch view of this tensor's elements (no copy)."""
        st = self.storage
        if st.pending is not None:
            st.materialize()
        t = self._t
        if t is None:
            t = self._t = self.flat.as_strided(self.shape, self.strides, self.offset)
        return t

    def covers_storage(self) -> bool:
        """Whether this view is its whole storage in order (offset 0, contiguous, every byte)."""
        st = self.storage
        if self.shape == st.shape and self.flat is st.flat and not self.offset:
            return self.strides == st.strides  # the allocation's own (contiguous) layout
        if self.offset or self.size * dtypes.itemsize(self.dtype) != st.flat.numel() * (
            st.flat.element_size()
        ):
            return False
        return self.strides == contiguous_strides(self.shape)

    def overwrite_view(self) -> torch.Tensor:
        """The torch view for an instruction that writes every element of this view and
        reads none of its storage: a new allocation's uninitialised pattern is not written
        under it (only, later, where nothing was written; nki/coverage.py)."""
        st = self.storage
        if st.pending is not None and not st.note_write(self):
            st.materialize()
        t = self._t
        if t is None:
            t = self._t = self.flat.as_strided(self.shape, self.strides, self.offset)
        return t

    def read(self, mask=None) -> torch.Tensor:
        return self.tensor

    def write(self, value, mask=None):
        t = self.tensor if mask is not None else self.overwrite_view()
        if (
            0 in self.strides
            and self.size > 1
            and any(s == 0 and n > 1 for s, n in zip(self.strides, self.shape, strict=False))
        ):
            fail(f"cannot write through a broadcast view {self.shape} (stride 0)")
        if mask is None:
            if isinstance(value, torch.Tensor) and value.shape != t.shape:
                value = value.reshape(t.shape) if value.numel() == t.numel() else value
            t.copy_(value)
        else:
            v = value if isinstance(value, torch.Tensor) else torch.tensor(value)
            t.copy_(torch.where(mask, v.to(t.dtype), t))

    # ---- layout queries
    def is_contiguous(self) -> bool:
        dims = range(1, self.ndim) if self.buffer.on_chip else range(self.ndim)
        expected = 1
        for d in reversed(list(dims)):
            if self.shape[d] != 1 and self.strides[d] != expected:
                return False
            expected *= self.shape[d]
        return True

    def get_pattern(self) -> list:
        return [[s, n] for s, n in zip(self.strides, self.shape, strict=False)]

    def is_indirect(self) -> bool:
        return False

    # ---- views
    def __getitem__(self, key) -> NkiTensor:
        if not isinstance(key, tuple):
            key = (key,)
        if len(key) == len(self.shape):
            view = self._sliced(key)
            if view is not None:
                return view
        for k in key:
            # an index expression, or a tile of indices (old kernels' indirect DMA)
            if k.__class__ is Idx or isinstance(k, TensorBase):
                return IndexedTensor.make(self, key)
        nd = self.ndim
        n_ell = sum(1 for k in key if k is Ellipsis)
        if n_ell > 1:
            fail("an index can only have a single ellipsis ('...')")
        given = len(key) - n_ell
        if given > nd:
            fail(f"too many indices ({given}) for a {nd}-D tensor of shape {self.shape}")
        if n_ell:
            i = key.index(Ellipsis)
            key = key[:i] + (slice(None),) * (nd - given) + key[i + 1 :]
        else:
            key = key + (slice(None),) * (nd - given)
        on_chip = self.buffer.on_chip
        shape, strides, kept_dims = [], [], []
        dropped = []
        offset = self.offset
        for d, k in enumerate(key):
            size, st = self.shape[d], self.strides[d]
            if isinstance(k, bool):
                fail(f"boolean index on dim {d} is not supported")
            if isinstance(k, int) or (hasattr(k, "__index__") and not isinstance(k, slice)):
                i = int(k)
                if i < 0:
                    i += size
                if not 0 <= i < size:
                    fail(
                        f"index {int(k)} is out of bounds for dim {d} of size {size} "
                        f"(tensor shape {self.shape}); out-of-bounds access needs a mask",
                    )
                offset += i * st
                if on_chip and d == 0:
                    shape.append(1)
                    strides.append(st)
                    kept_dims.append(d)
                else:
                    dropped.append((d, st))
            elif isinstance(k, slice):
                step = 1 if k.step is None else int(k.step)
                if step <= 0:
                    fail(f"slice step must be positive (got {step}) on dim {d}")
                start = 0 if k.start is None else int(k.start)
                stop = size if k.stop is None else int(k.stop)
                if start < 0:
                    start += size
                if stop < 0:
                    stop += size
                if start < 0 or stop > size or start >= stop:
                    fail(
                        f"slice {start}:{stop} is out of bounds for dim {d} of size {size} "
                        f"(tensor shape {self.shape}); out-of-bounds access needs a mask"
                    )
                n = (stop - start + step - 1) // step
                offset += start * st
                shape.append(n)
                strides.append(st * step)
                kept_dims.append(d)
            else:
                fail(
                    f"unsupported index {k!r} on dim {d}: use integers, slices, '...', nl.ds or "
                    f"nl.arange/nl.mgrid expressions"
                )
        min_nd = 2 if on_chip else 1
        if len(shape) < min_nd and dropped:
            # keep the last dropped (free) dims at size 1 so the view stays >= min_nd-D
            need = min_nd - len(shape)
            restore = dropped[-need:]
            pairs = sorted(
                list(zip(kept_dims, shape, strides, strict=False))
                + [(d, 1, st) for d, st in restore]
            )
            shape = [p[1] for p in pairs]
            strides = [p[2] for p in pairs]
        return NkiTensor._view(self, shape, strides, offset)

    def _sliced(self, key):
        """``self[key]`` when every dim is indexed by an in-bounds ``start:stop`` slice of
        Python ints (the common tile access), else None (``__getitem__`` decides, and names
        what is wrong)."""
        shape, strides = [], []
        offset = self.offset
        for k, size, st in zip(key, self.shape, self.strides, strict=False):
            if k.__class__ is not slice:
                return None
            step = k.step
            if step is not None and (step.__class__ is not int or step != 1):
                return None
            start, stop = k.start, k.stop
            if start is None:
                start = 0
            elif start.__class__ is not int:
                return None
            elif start < 0:
                start += size
            if stop is None:
                stop = size
            elif stop.__class__ is not int:
                return None
            elif stop < 0:
                stop += size
            if start < 0 or stop > size or start >= stop:
                return None
            offset += start * st
            shape.append(stop - start)
            strides.append(st)
        return NkiTensor._view(self, shape, strides, offset)

    def __setitem__(self, key, value):
        LANGUAGE["assign"](self[key], value)

    def slice(self, dim: int, start: int, end: int, step: int = 1) -> NkiTensor:
        key = [slice(None)] * self.ndim
        key[_dim(self, dim)] = slice(start, end, step)
        return self[tuple(key)]

    def select(self, dim: int, index) -> NkiTensor:
        if is_register(index) or isinstance(index, TensorBase):
            return self._dynamic_select(dim, index)
        if isinstance(index, bool) or not hasattr(index, "__index__"):
            fail(f"select: the index must be an integer, a 1x1 SBUF tile or a register: {index!r}")
        index = index.__index__()
        dim = _dim(self, dim)
        if self.buffer.on_chip and dim == 0:
            fail("select on the partition dim (0) of an on-chip tensor is not allowed")
        if not 0 <= index < self.shape[dim]:
            fail(f"select index {index} is out of bounds for dim {dim} of size {self.shape[dim]}")
        shape = self.shape[:dim] + self.shape[dim + 1 :]
        strides = self.strides[:dim] + self.strides[dim + 1 :]
        return NkiTensor._view(self, shape, strides, self.offset + index * self.strides[dim])

    def _dynamic_select(self, dim: int, index) -> DynamicTensor:
        """``select`` with an index read when the instruction runs (a 1x1 SBUF tile or a
        register): the dim is removed and the view starts ``index * stride`` further."""
        dim = _dim(self, dim)
        what = f"select({dim}, <dynamic index>)"
        if self.buffer.on_chip and dim == 0:
            fail(f"{what}: a dynamic select on an on-chip tensor cannot use the partition dim (0)")
        if not is_register(index):
            check_index_tile(what, index, one=True)
        shape = self.shape[:dim] + self.shape[dim + 1 :]
        strides = self.strides[:dim] + self.strides[dim + 1 :]
        if self.buffer.on_chip and len(shape) < 2:
            shape, strides = shape + (1,), strides + (1,)
        base = NkiTensor._view(self, shape, strides, self.offset)
        return DynamicTensor(base, SCALAR, index, self.strides[dim], self.shape[dim], what)

    def vector_select(self, dim, vector_offset) -> DynamicTensor:
        """Per-partition indirect rows (indirect DMA): row ``p`` of the view is row
        ``vector_offset[p]`` of dim 0 of this HBM tensor."""
        dim = _dim(self, dim)
        what = "vector_select(0, vector_offset)"
        if dim != 0:
            fail(f"vector_select: dim must be 0 (got {dim})")
        if self.buffer.on_chip:
            fail(f"{what} is only supported on HBM tensors; this one is in {self.buffer.value}")
        check_index_tile(what, vector_offset)
        rows = vector_offset.shape[0]
        shape = (rows,) + self.shape[1:]
        base = NkiTensor._view(self, shape, (0,) + self.strides[1:], self.offset)
        return DynamicTensor(base, VECTOR, vector_offset, self.strides[0], self.shape[0], what)

    def indirect(self, index, num_elem=None) -> DynamicTensor:
        """Tensor indirection (NeuronCore-v4): a ``(P, num_elem)`` view whose column ``i`` in
        partition ``p`` is the free-dim element at offset ``index[16 g + i % 16, i // 16]``
        of ``p``'s 16-partition group ``g`` (offsets into the flattened free dims)."""
        what = "indirect(index)"
        if not self.buffer.on_chip:
            fail(f"{what}: tensor indirection addresses an SBUF or PSUM tensor, not HBM")
        check_index_tile(what, index)
        if index.dtype is not torch.uint16:
            fail(f"{what}: the index tile must be uint16, got {dtypes.name(index.dtype)}")
        P = self.shape[0]
        if index.shape[0] != P:
            fail(f"{what}: the index has {index.shape[0]} partitions; the data has {P}")
        G = min(TI_GROUP, P)
        if P % G:
            fail(f"{what}: {P} partitions is not a whole number of {G}-partition groups")
        # the offsets of one group: 16 rows x K on the Vector/Scalar/GpSimd Engines, 32 rows on
        # the Tensor Engine (checked when an instruction uses the view)
        per_group = G * index.free_size
        n = per_group if num_elem is None else int(num_elem)
        if not 1 <= n <= min(TI_GROUP_TENSOR, P) * index.free_size:
            fail(
                f"{what}: num_elem={n} but each {G}-partition group has {per_group} offsets "
                f"(index shape {index.shape})"
            )
        return DynamicTensor(
            self, TENSOR_INDIRECT, index, 1, self.free_size, what, shape=(P, n), num=n
        )

    def permute(self, dims) -> NkiTensor:
        dims = tuple(int(d) for d in dims)
        if sorted(dims) != list(range(self.ndim)):
            fail(f"permute dims {dims} are not a permutation of range({self.ndim})")
        if self.buffer.on_chip and dims[0] != 0:
            fail(
                f"permute {dims} moves the partition dim of an on-chip tensor; moving data "
                f"across partitions needs a transpose (nisa.nc_transpose / dma_transpose)"
            )
        return NkiTensor._view(
            self, [self.shape[d] for d in dims], [self.strides[d] for d in dims], self.offset
        )

    def broadcast(self, dim: int, size: int) -> NkiTensor:
        dim = _dim(self, dim)
        if self.shape[dim] != 1:
            fail(f"broadcast needs a size-1 dim; dim {dim} has size {self.shape[dim]}")
        if self.buffer.on_chip and dim == 0:
            fail(
                "broadcast of the partition dim of an on-chip tensor needs a physical copy "
                "(nl.broadcast_to)"
            )
        shape = list(self.shape)
        strides = list(self.strides)
        shape[dim], strides[dim] = int(size), 0
        return NkiTensor._view(self, shape, strides, self.offset)

    def expand_dim(self, dim: int) -> NkiTensor:
        dim = int(dim) if dim >= 0 else self.ndim + 1 + int(dim)
        if self.buffer.on_chip and dim == 0:
            fail("expand_dim cannot insert a dim before the partition dim of an on-chip tensor")
        shape = list(self.shape)
        strides = list(self.strides)
        shape.insert(dim, 1)
        strides.insert(dim, strides[dim] if dim < len(strides) else 1)
        return NkiTensor._view(self, shape, strides, self.offset)

    def squeeze_dim(self, dim: int) -> NkiTensor:
        dim = _dim(self, dim)
        if self.shape[dim] != 1:
            fail(f"squeeze_dim needs a size-1 dim; dim {dim} has size {self.shape[dim]}")
        if self.buffer.on_chip and dim == 0:
            fail("squeeze_dim cannot remove the partition dim of an on-chip tensor")
        return NkiTensor._view(
            self,
            self.shape[:dim] + self.shape[dim + 1 :],
            self.strides[:dim] + self.strides[dim + 1 :],
            self.offset,
        )

    def reshape_dim(self, dim: int, shape) -> NkiTensor:
        dim = _dim(self, dim)
        shape = list(int(s) for s in shape)
        if shape.count(-1) > 1:
            fail("reshape_dim: at most one -1")
        if -1 in shape:
            rest = math.prod(s for s in shape if s != -1)
            shape[shape.index(-1)] = self.shape[dim] // rest if rest else 0
        if math.prod(shape) != self.shape[dim]:
            fail(f"reshape_dim: {tuple(shape)} does not have {self.shape[dim]} elements")
        if self.buffer.on_chip and dim == 0 and len([s for s in shape if s != 1]) > 1:
            fail("reshape_dim cannot split the partition dim of an on-chip tensor")
        st = self.strides[dim]
        new_strides = []
        acc = st
        for s in reversed(shape):
            new_strides.insert(0, acc)
            acc *= s
        return NkiTensor._view(
            self,
            self.shape[:dim] + tuple(shape) + self.shape[dim + 1 :],
            self.strides[:dim] + tuple(new_strides) + self.strides[dim + 1 :],
            self.offset,
        )

    def flatten_dims(self, start_dim: int, end_dim: int) -> NkiTensor:
        a, b = _dim(self, start_dim), _dim(self, end_dim)
        if self.buffer.on_chip and a == 0:
            fail("flatten_dims cannot merge the partition dim of an on-chip tensor")
        for k in range(a, b):
            merged = self.strides[k + 1] * self.shape[k + 1]
            if self.shape[k + 1] != 1 and self.shape[k] != 1 and self.strides[k] != merged:
                fail(
                    f"flatten_dims({a}, {b}): dims are not contiguous in memory "
                    f"(strides {self.strides})"
                )
        n = math.prod(self.shape[a : b + 1])
        inner = next((self.strides[k] for k in range(b, a - 1, -1) if self.shape[k] != 1), 1)
        return NkiTensor._view(
            self,
            self.shape[:a] + (n,) + self.shape[b + 1 :],
            self.strides[:a] + (inner,) + self.strides[b + 1 :],
            self.offset,
        )

    def reshape(self, shape) -> NkiTensor:
        if isinstance(shape, int):
            shape = (shape,)
        shape = [int(s) for s in shape]
        if shape.count(-1) == 1:
            rest = math.prod(s for s in shape if s != -1)
            shape[shape.index(-1)] = self.size // rest if rest else 0
        if math.prod(shape) != self.size:
            fail(
                f"cannot reshape a tensor of shape {self.shape} ({self.size} elements) to "
                f"{tuple(shape)}"
            )
        if self.buffer.on_chip:
            if shape[0] != self.shape[0]:
                fail(
                    f"reshape {self.shape} -> {tuple(shape)} changes the partition dim of an "
                    f"on-chip tensor; moving data across partitions needs a physical copy"
                )
            if not self.is_contiguous():
                fail(f"reshape of a non-contiguous view (strides {self.strides}) is not a view")
            free = contiguous_strides(tuple(shape[1:]))
            return NkiTensor._view(self, shape, (self.strides[0],) + free, self.offset)
        if not self.is_contiguous():
            fail(f"reshape of a non-contiguous HBM view (strides {self.strides}) is not a view")
        return NkiTensor._view(self, shape, contiguous_strides(tuple(shape)), self.offset)

    def rearrange(self, src_pattern, dst_pattern, fixed_sizes=None) -> NkiTensor:
        """einops-style: split grouped source dims, reorder, merge grouped destination dims
        (a view: ``reshape_dim``, ``permute``, ``flatten_dims``)."""
        return rearranged(self, src_pattern, dst_pattern, fixed_sizes)

    def ap(
        self,
        pattern,
        offset=None,
        scalar_offset=None,
        vector_offset=None,
        indirect_dim=0,
        dtype=None,
    ) -> NkiTensor:
        if scalar_offset is not None and vector_offset is not None:
            fail("ap: scalar_offset and vector_offset are mutually exclusive")
        base = self.view(dtype) if dtype is not None and dtype != self.dtype else self
        pattern = [[int(s), int(n)] for s, n in pattern]
        if self.buffer.on_chip:
            if pattern[0][0] != self.storage.partition_elems * (
                dtypes.itemsize(self.dtype) // dtypes.itemsize(base.dtype)
            ):
                fail(
                    f"access pattern partition stride {pattern[0][0]} must equal the storage's "
                    f"elements per partition ({self.storage.partition_elems}) so that every "
                    f"partition performs the same access"
                )
        off = base.offset if offset is None else base.offset + int(offset)
        if scalar_offset is not None or vector_offset is not None:
            return self._indirect_ap(
                base, pattern, off, scalar_offset, vector_offset, int(indirect_dim)
            )
        shape = tuple(n for _, n in pattern)
        strides = tuple(s for s, _ in pattern)
        hi = off + sum((n - 1) * s for s, n in pattern if s > 0)
        lo = off + sum((n - 1) * s for s, n in pattern if s < 0)
        if lo < 0 or hi >= base.flat.numel():
            fail(
                f"access pattern {pattern} (offset {off}) reaches outside its storage of "
                f"{base.flat.numel()} elements; out-of-bounds access needs a mask"
            )
        return NkiTensor._view(base, shape, strides, off)

    def _indirect_ap(self, base, pattern, off, scalar_offset, vector_offset, d):
        """``ap`` with a dynamic offset: ``index * stride of self's dim d`` elements (in the
        pattern's dtype) are added to the pattern's start (scalar_offset: to every element;
        vector_offset: row ``p`` starts at ``index[p] * stride``, the pattern's first entry
        giving the row count, as in AWS's indirect gather example)."""
        d = _dim(self, d)
        scale = self.strides[d] * dtypes.itemsize(self.dtype) // dtypes.itemsize(base.dtype)
        if vector_offset is not None:
            what = "ap(..., vector_offset=)"
            if self.buffer.on_chip:
                fail(f"{what}: the indexed tensor must be in HBM, it is in {self.buffer.value}")
            check_index_tile(what, vector_offset)
            strides = (0,) + tuple(s for s, _ in pattern[1:])
            view = NkiTensor._view(base, tuple(n for _, n in pattern), strides, off)
            return DynamicTensor(view, VECTOR, vector_offset, scale, self.shape[d], what)
        what = "ap(..., scalar_offset=)"
        if self.buffer.on_chip and d == 0:
            fail(f"{what}: on an on-chip tensor the indirect dim cannot be the partition dim")
        if not is_register(scalar_offset):
            check_index_tile(what, scalar_offset, one=True)
        view = NkiTensor._view(
            base, tuple(n for _, n in pattern), tuple(s for s, _ in pattern), off
        )
        return DynamicTensor(view, SCALAR, scalar_offset, scale, self.shape[d], what)

    def view(self, dtype) -> NkiTensor:
        dtype = dtypes.normalize(dtype)
        old, new = dtypes.itemsize(self.dtype), dtypes.itemsize(dtype)
        if old == new:
            flat = self.flat.view(dtypes.storage_dtype(dtype))
            return NkiTensor._view(self, self.shape, self.strides, self.offset, flat, dtype)
        if self.strides[-1] != 1:
            fail("view(dtype) needs the last dim to be contiguous")
        flat = self.flat.view(dtypes.storage_dtype(dtype))
        if new < old:
            r = old // new
            shape = self.shape[:-1] + (self.shape[-1] * r,)
            strides = tuple(s * r for s in self.strides[:-1]) + (1,)
            return NkiTensor._view(self, shape, strides, self.offset * r, flat, dtype)
        r = new // old
        if self.shape[-1] % r or self.offset % r or any(s % r for s in self.strides[:-1]):
            fail(
                f"view({dtypes.name(dtype)}): last dim {self.shape[-1]} / offsets not divisible "
                f"by {r}"
            )
        shape = self.shape[:-1] + (self.shape[-1] // r,)
        strides = tuple(s // r for s in self.strides[:-1]) + (1,)
        return NkiTensor._view(self, shape, strides, self.offset // r, flat, dtype)

    reinterpret_cast = view

    # legacy tile methods
    def broadcast_to(self, shape):
        return LANGUAGE["broadcast_to"](self, shape)

    def astype(self, dtype):
        return LANGUAGE["copy"](self, dtype=dtype)


def _dim(t, dim: int) -> int:
    d = int(dim)
    if d < 0:
        d += t.ndim
    if not 0 <= d < t.ndim:
        fail(f"dim {dim} out of range for a {t.ndim}-D tensor")
    return d
