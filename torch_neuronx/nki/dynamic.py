"""Dynamic and indirect NKI tensor views: addresses that come from SBUF or a register when the
instruction runs, not when the kernel is written.

Three kinds, as in AWS's NKI 2.33 API (``NkiTensor.select`` with a tensor index,
``vector_select``, ``ap(scalar_offset= / vector_offset=, indirect_dim=)``, ``indirect``):

- **scalar** (dynamic addressing): one value, from a 1x1 integer SBUF tile or a
  ``VirtualRegister``, moves the whole access pattern by ``value * scale`` elements;
- **vector** (indirect DMA, gather/scatter): row ``p`` of the access starts at
  ``index[p] * scale`` (HBM tensors, DMA instructions only; AWS's software DGE);
- **tensor indirection** (NeuronCore-v4): column ``i`` of partition ``p`` is the free-dim
  element at offset ``index[16 g + i % 16, i // 16]`` of ``p``'s 16-partition group ``g``.

Values are read when an instruction reads or writes the view (a kernel may change the index
tile or register between building a view and using it, as on hardware). Every access is a
strided view (a scalar offset in bounds), one ``index_select`` of rows, or one torch gather /
scatter over element positions, never a Python loop. An out-of-bounds row (an index outside
its dim, or elements outside the tensor) is an error naming the kernel line, or, for DMA
instructions with ``oob_mode=nisa.oob_mode.skip``, a row the transfer skips.

Sources: AWS's NKI 2.33 API stubs (``nki.language.NkiTensor``: ``select``, ``vector_select``,
``ap``, ``indirect``; ``nki.isa.dma_copy``: "Indirect addressing (gather/scatter)", ``oob_mode``;
https://github.com/aws-neuron/aws-neuron-sdk/blob/81ce03ae261e12925e53437a0f690478e6366155/nki/api/nki/language/__init__.py),
"NKI Access Patterns" and "Descriptor Generation Engine (DGE) Reference"
(https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/deep-dives/nki-aps.html,
https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/deep-dives/nki-dge.html).
"""

from __future__ import annotations

import math

import torch

from . import dtypes, running
from .errors import fail
from .storage import MemoryRegion
from .tensor_base import BaseView, TensorBase

#: partitions that share one row group of a tensor-indirection index (Vector, Scalar and
#: GpSimd Engines; AWS's ``NkiTensor.indirect`` page: 32 on the Tensor Engine)
TI_GROUP = 16
TI_GROUP_TENSOR = 32
_TENSOR_ENGINE_OPCODES = frozenset({"nc_matmul"})

SCALAR, VECTOR, TENSOR_INDIRECT = "scalar", "vector", "tensor indirection"


def is_register(x) -> bool:
    """A ``nisa.VirtualRegister`` (isa/registers.py sits above this module: duck-typed)."""
    return hasattr(x, "loaded") and hasattr(x, "get") and not isinstance(x, TensorBase)


def check_index_tile(what: str, index, on_chip_only: bool = True, one: bool = False):
    """The rules of an index operand: an NKI tile of integers (SBUF for offsets)."""
    if not isinstance(index, TensorBase) or index.__class__ is DynamicTensor:
        fail(f"{what}: the index must be an NKI tile (or a register), got {type(index).__name__}")
    if on_chip_only and index.buffer is not MemoryRegion.sbuf:
        fail(f"{what}: the index tile must be in SBUF, it is in {index.buffer.value}")
    if not dtypes.is_int(index.dtype):
        fail(f"{what}: the index tile must hold integers, got {dtypes.name(index.dtype)}")
    if one and index.size != 1:
        fail(f"{what}: a scalar offset is a tile of exactly one element, got shape {index.shape}")


class DynamicTensor(BaseView):
    """A view whose start (scalar), row starts (vector) or columns (tensor indirection) are
    read from ``index`` when an instruction runs. ``base`` is the static part: the view at
    offset 0 of the dynamic term (vector: with the row stride 0)."""

    __slots__ = ("base", "kind", "index", "scale", "limit", "what", "shape", "_fs", "num")

    def __init__(self, base, kind, index, scale, limit, what, shape=None, num=0):
        self.base = base
        self.kind = kind
        self.index = index
        self.scale = int(scale)
        self.limit = int(limit)
        self.what = what  # "t.select(1, idx)": the construct, for messages
        self.shape = tuple(shape if shape is not None else base.shape)
        self._fs = None
        self.num = num

    # ---- what instructions read (the data tensor's; storage, dtype, name: BaseView)
    @property
    def flat(self):
        return self.base.flat

    def __repr__(self) -> str:
        return f"DynamicTensor({self.kind} {self.what}, shape={self.shape})"

    def index_tiles(self) -> list:
        """The tiles the instruction reads besides the data (its dependencies)."""
        return [self.index] if isinstance(self.index, TensorBase) else []

    def is_indirect(self) -> bool:
        return True

    def is_contiguous(self) -> bool:
        return False

    def covers_storage(self) -> bool:
        return False

    def get_pattern(self) -> list:
        return self.base.get_pattern()

    def _refuse(self, *args, **kwargs):
        fail(
            f"{self.what} is an indirect view: it cannot be viewed, selected or made indirect "
            f"again (AWS: 'Indirect views cannot be re-indirected'); apply slices, permutes and "
            f"reshapes before the dynamic select / indirect access"
        )

    __getitem__ = select = vector_select = indirect = ap = slice = permute = _refuse
    reshape = reshape_dim = flatten_dims = expand_dim = squeeze_dim = broadcast = _refuse
    rearrange = view = reinterpret_cast = _refuse

    def __setitem__(self, key, value):
        self._refuse()

    # ---- addresses
    def _values(self) -> torch.Tensor:
        """The index values (int64): one (scalar), one per row (vector), (P, num) (TI)."""
        x = self.index
        if self.kind == SCALAR:
            if is_register(x):
                v = x.get(f"{self.what}: the offset register")
                return torch.tensor([0 if v is None else int(v)])
            return x.read().reshape(-1)[:1].to(torch.int64)
        if self.kind == VECTOR:
            return self._row_values().to(torch.int64)
        raw = x.read().to(torch.int64)
        # tensor indirection: offset i of partition p's group g is index[g*G + i%G, i//G]
        P, n = self.shape[0], self.num
        opcode = _opcode()
        te = opcode in _TENSOR_ENGINE_OPCODES
        G = min(TI_GROUP_TENSOR if te else TI_GROUP, P)
        raw = raw.reshape(raw.shape[0], -1)
        if P % G or n > G * raw.shape[1]:
            fail(
                f"nisa.{opcode}: {self.what}: the {'Tensor' if te else 'Vector/Scalar/GpSimd'} "
                f"Engine groups {G} partitions; {P} partitions and {n} offsets do not fit an "
                f"index of shape {tuple(raw.shape)} ({G * raw.shape[1]} offsets per group)"
            )
        p = torch.arange(P).reshape(P, 1)
        i = torch.arange(n).reshape(1, n)
        return raw[(p // G) * G + i % G, i // G]

    def _row_values(self) -> torch.Tensor:
        """Vector: the offset of each row, in the index tile's own integer dtype when torch
        indexes with it (int32, int64; others as int64). AWS's indirect transpose:
        ``indices.T.flatten()[:rows]`` (a (P, 1) index: ``index[p]``)."""
        x = self.index
        if (
            x.free_size == 1
            and not isinstance(x, BaseView)
            and not x.offset
            and x.strides[0] == 1
            and x.flat.numel() == x.shape[0]
        ):  # a whole (P, 1) tile: its memory is the column of offsets (no view to make)
            st = x.storage
            if st.pending is not None:
                st.materialize()
            flat = x.flat
        else:
            raw = x.read()
            if x.free_size == 1:
                flat = raw.reshape(-1)
            else:
                flat = raw.reshape(raw.shape[0], -1).t().reshape(-1)
        if flat.dtype is not torch.int32 and flat.dtype is not torch.int64:
            flat = flat.to(torch.int64)
        rows = self.shape[0]
        n = flat.numel()
        if n < rows:
            fail(f"{self.what}: the vector_offset tile has {n} offsets for {rows} rows")
        return flat if n == rows else flat[:rows]

    def _oob(self, bad_values, opcode, skip_ok):
        v = int(bad_values.reshape(-1)[0])
        hint = (
            "; pass oob_mode=nisa.oob_mode.skip to skip out-of-bounds rows"
            if skip_ok
            else "; only DMA instructions (oob_mode=nisa.oob_mode.skip) may skip them"
        )
        if self.kind == TENSOR_INDIRECT:
            fail(
                f"nisa.{opcode}: {self.what}: offset {v} is outside the {self.limit} free "
                f"elements of each partition of the data tensor (AWS leaves this undefined)"
            )
        fail(
            f"nisa.{opcode}: {self.what}: dynamic index {v} is out of bounds [0, {self.limit}) "
            f"or moves the access outside its tensor (oob_mode=error){hint}"
        )

    def positions(self, opcode: str, skip: bool = False, skip_ok: bool = False):
        """(element positions in ``flat``, in-bounds mask or None when all are in bounds)."""
        if self.kind == TENSOR_INDIRECT:
            return self._ti_positions(opcode), None
        starts, good = self._starts(opcode, skip, skip_ok)
        b = self.base
        nd = len(b.shape)
        pos = torch.zeros((1,) * nd, dtype=torch.int64)
        for d in range(1, nd):
            shape = [1] * nd
            shape[d] = b.shape[d]
            pos = pos + (torch.arange(b.shape[d]) * b.strides[d]).reshape(shape)
        pos = (pos + starts.reshape((-1,) + (1,) * (nd - 1))).expand(b.shape)
        if good is None:
            return pos, None
        return pos, good.reshape((-1,) + (1,) * (nd - 1)).expand(b.shape)

    def _ti_positions(self, opcode):
        b = self.base
        vals = self._values()
        bad = (vals < 0) | (vals >= self.limit)
        if bool(bad.any()):
            self._oob(vals[bad], opcode, False)
        rem = vals
        pos = torch.full(vals.shape, b.offset, dtype=torch.int64)
        pos = pos + torch.arange(self.shape[0]).reshape(-1, 1) * b.strides[0]
        for size, st in zip(reversed(b.shape[1:]), reversed(b.strides[1:]), strict=False):
            pos = pos + (rem % size) * st
            rem = rem // size
        return pos

    def _starts(self, opcode, skip, skip_ok):
        """The start element of each row (the pattern's first dim: a DMA partition) with
        the dynamic term, ``base.offset`` included, and which rows are in bounds (None: all).
        A row is out of bounds when its index is outside ``[0, limit)`` or its elements leave
        the tensor; that raises unless ``skip`` (the DMA then skips those rows, as AWS's
        nki-library ``indexed_flatten`` relies on); a skipped row's start reads as 0."""
        b = self.base
        numel = b.flat.numel()
        inner = list(zip(b.shape[1:], b.strides[1:], strict=False))
        lo = sum((n - 1) * st for n, st in inner if st < 0)
        hi = sum((n - 1) * st for n, st in inner if st > 0)
        rows, st0, scale = b.shape[0], b.strides[0], self.scale
        vals = self._values()  # (1,) scalar, (rows,) vector
        # fast check on the extremes (Python ints): the common case, every row in bounds
        if self.kind == SCALAR:
            vmin = vmax = int(vals[0])
        else:
            vmin, vmax = (int(x) for x in vals.aminmax())
        span = (rows - 1) * st0
        first = b.offset + min(vmin * scale, vmax * scale) + min(0, span) + lo
        last = b.offset + max(vmin * scale, vmax * scale) + max(0, span) + hi
        if 0 <= vmin and vmax < self.limit and first >= 0 and last < numel:
            if self.kind == SCALAR:
                start = b.offset + vmin * scale
                return (
                    torch.arange(rows) * st0 + start if rows > 1 else torch.tensor([start])
                ), None
            return vals * scale + b.offset, None  # vector rows: the base's row stride is 0
        starts = b.offset + torch.arange(rows) * st0 + vals * scale
        good = (vals >= 0) & (vals < self.limit) & (starts + lo >= 0) & (starts + hi < numel)
        if bool(good.all()):
            return starts, None
        if not skip:
            self._oob(vals.expand(good.shape)[~good], opcode, skip_ok)
        return torch.where(good, starts, torch.zeros_like(starts)), good

    def gather(self, opcode=None, skip: bool = False, skip_ok: bool = False, out=None):
        """(values, in-bounds mask or None): skipped rows read as zero. A scalar offset in
        bounds is a strided view; rows are one ``index_select`` over a view whose rows start
        at every element (no per-element positions)."""
        self.storage.materialize()
        opcode = opcode or _opcode()
        b = self.base
        flat = b.flat
        if self.kind == TENSOR_INDIRECT:
            return flat[self.positions(opcode)[0]], None
        if self.kind == VECTOR:
            v = self._gather_blocks(out)
            if v is not None:
                return v, None
        starts, good = self._starts(opcode, skip, skip_ok)
        if self.kind == SCALAR and good is None:
            return flat.as_strided(b.shape, b.strides, int(starts[0])), None
        inner, istr = b.shape[1:], b.strides[1:]
        ok = None if good is None else good.reshape((-1,) + (1,) * len(inner)).expand(b.shape)
        if any(st < 0 for st in istr):  # torch views need non-negative strides: positions
            v = flat[self.positions(opcode, skip, skip_ok)[0]]
        else:
            v = _rows(flat, starts, inner, istr, self.scale, b, out if ok is None else None)
        if ok is not None:
            v = torch.where(ok, v, torch.zeros((), dtype=v.dtype))
        return v, ok

    def _gather_blocks(self, out=None):
        """Vector rows when each is inside one block of ``scale`` elements of the data tensor
        (an embedding table's rows) and every index is in bounds: one ``index_select`` of
        blocks with the index values as they are (no positions, no per-row arithmetic);
        None when that does not hold (``_starts`` then checks, raises or skips row by row).
        The bounds are those of ``_starts``: ``0 <= index < limit`` and every element of
        every row inside the tensor, checked on the extreme index values."""
        b = self.base
        flat = b.flat
        scale = self.scale
        if scale <= 0 or b.offset < 0 or not flat.is_contiguous():
            return None
        inner, istr = b.shape[1:], b.strides[1:]
        ext = 0
        for n, st in zip(inner, istr, strict=False):
            if st < 0:
                return None
            ext += (n - 1) * st
        k, c0 = divmod(b.offset, scale)  # row 0 of index 0 starts c0 into block k
        if c0 + ext >= scale:
            return None
        vals = self._row_values()
        lo, hi = vals.aminmax()
        vmin, vmax = int(lo), int(hi)
        if vmin < 0 or vmax >= self.limit or (k + vmax + 1) * scale > flat.numel():
            return None
        blocks = flat.as_strided((flat.numel() // scale, scale), (scale, 1))
        r = vals if k == 0 else vals + k
        if c0 == 0 and ext == scale - 1 and len(inner) == 1 and istr[0] == 1:  # whole blocks
            if out is not None and out.shape == (vals.shape[0], scale):
                return torch.index_select(blocks, 0, r, out=out)  # straight into dst's memory
            return blocks.index_select(0, r)
        got = blocks.index_select(0, r)
        return got.as_strided((got.shape[0],) + inner, (scale,) + istr, c0)

    def read(self, mask=None, opcode=None, skip: bool = False, skip_ok: bool = False):
        return self.gather(opcode, skip, skip_ok)[0]

    def write(self, value, mask=None, opcode=None, skip: bool = False, skip_ok: bool = False):
        self.storage.materialize()
        opcode = opcode or _opcode()
        flat = self.base.flat
        v = value if isinstance(value, torch.Tensor) else torch.tensor(value)
        if v.numel() == math.prod(self.shape):
            v = v.reshape(self.shape)
        v = torch.broadcast_to(v, self.shape).to(flat.dtype)
        if self.kind == SCALAR:
            b = self.base
            starts, good = self._starts(opcode, skip, skip_ok)
            if good is None:  # in bounds: a strided view
                view = flat.as_strided(b.shape, b.strides, int(starts[0]))
                view.copy_(v if mask is None else torch.where(mask, v, view))
                return
        pos, ok = self.positions(opcode, skip, skip_ok)
        pos = pos.reshape(self.shape)
        sel = None if ok is None else ok.reshape(self.shape)
        if mask is not None:
            sel = mask if sel is None else (sel & mask)
        if sel is None:
            # duplicate positions: the last write wins (AWS: the compiler serialises them)
            flat.index_put_((pos.reshape(-1),), v.reshape(-1))
        else:
            sel = torch.broadcast_to(sel, self.shape)
            flat.index_put_((pos[sel],), v[sel])


def _rows(flat, starts, inner, istr, scale, b, out=None):
    """``flat`` gathered at rows starting at ``starts`` with the inner pattern. When every
    start is ``c0`` past a multiple of ``scale`` and the pattern fits in ``scale`` elements
    (an embedding table's rows), one ``index_select`` of whole contiguous blocks; otherwise
    one over a view whose rows start at every element."""
    ext = sum((n - 1) * st for n, st in zip(inner, istr, strict=False))
    n = flat.numel()
    if scale > 0 and b.strides[0] % scale == 0 and flat.is_contiguous():
        c0 = b.offset % scale
        if c0 + ext < scale and n >= scale and n % scale == 0:
            blocks = flat[: (n // scale) * scale].view(n // scale, scale)
            r = torch.div(starts, scale, rounding_mode="floor")
            whole = c0 == 0 and ext == scale - 1 and len(inner) == 1 and istr[-1] == 1
            if whole and out is not None and out.shape == (len(r), scale):
                return torch.index_select(blocks, 0, r, out=out)  # straight into dst's memory
            got = blocks.index_select(0, r)
            if whole:
                return got  # whole rows
            return got.as_strided((got.shape[0],) + inner, (scale,) + istr, c0)
    rows = flat.as_strided((max(1, n - ext),) + inner, (1,) + istr, 0)
    return rows.index_select(0, starts)


def _opcode() -> str:
    ex = getattr(running.slot, "ex", None)
    return getattr(ex, "opcode", "") or "instruction"
