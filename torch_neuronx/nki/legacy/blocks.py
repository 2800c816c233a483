"""Block dimensions of the pre-0.2 language: ``nl.ndarray((B, nl.par_dim(P), F), ...)``.

In ``neuronxcc.nki`` an SBUF/PSUM tensor's shape was ``(B..., P, F...)``: the dims in front of
the ``par_dim`` are *block* dims, each block an independent ``(P, F...)`` tile (AWS, "NKI Block
Dimension Migration Guide"). NKI 0.2+ removed them; the guide's replacement moves the block
dims behind the partition dim, ``(P, B..., F...)``, which is exactly how the blocks sit in the
partitions' memory. A :class:`BlockTensor` is that ``(P, B..., F...)`` tensor seen with the old
``(B..., P, F...)`` indexing: ``t[b]`` (every block dim an integer) is the block's tile, an
ordinary :class:`NkiTensor` view, and ``t[b, ip, if] = ...`` writes it.
"""

from __future__ import annotations

from ..errors import fail
from ..indexing import Idx
from ..tensor import NkiTensor
from ..tensor_base import LANGUAGE

_REPLACE = (
    "index every block dim with an integer (t[b] or t[b, ...]) to get one (P, F...) tile; in "
    "NKI 0.2+ allocate (P, B..., F...) instead (AWS's NKI Block Dimension Migration Guide)"
)


class par_dim(int):  # noqa: N801 - NKI's name
    """``nl.par_dim(n)``: marks the partition dim of a shape; dims before it are blocks."""

    def __repr__(self) -> str:
        return f"par_dim({int(self)})"


def split_shape(shape):
    """(block dims, tile shape) of a legacy shape; no par_dim: no block dims."""
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    marks = [i for i, s in enumerate(shape) if isinstance(s, par_dim)]
    if len(marks) > 1:
        fail(f"a shape has one nl.par_dim, got {len(marks)} in {shape}")
    k = marks[0] if marks else 0
    return tuple(int(s) for s in shape[:k]), tuple(int(s) for s in shape[k:])


class BlockTensor:
    """A legacy on-chip tensor ``(B..., P, F...)`` over a ``(P, B..., F...)`` NkiTensor."""

    __slots__ = ("under", "nblock")

    def __init__(self, under: NkiTensor, nblock: int):
        self.under = under  # (P, B..., F...)
        self.nblock = nblock

    @property
    def shape(self):
        u = self.under.shape
        return u[1 : 1 + self.nblock] + (u[0],) + u[1 + self.nblock :]

    @property
    def dtype(self):
        return self.under.dtype

    @property
    def buffer(self):
        return self.under.buffer

    @property
    def ndim(self) -> int:
        return self.under.ndim

    def __repr__(self) -> str:
        return f"BlockTensor(shape={self.shape} with {self.nblock} block dim(s), {self.under!r})"

    def _key(self, key):
        """The (P, B..., F...) key for an old-style (B..., P, F...) key."""
        if not isinstance(key, tuple):
            key = (key,)
        if any(k is Ellipsis for k in key[: self.nblock]):
            fail(f"'...' in front of the partition dim of a tensor with block dims: {_REPLACE}")
        blocks, rest = key[: self.nblock], key[self.nblock :]
        # t[b] of a tensor with two block dims is the b-th (B2, P, F...) sub-tensor
        blocks = tuple(blocks) + (slice(None),) * (self.nblock - len(blocks))
        for d, b in enumerate(blocks):
            if isinstance(b, Idx):
                fail(
                    f"an nl.arange/nl.mgrid expression on block dim {d} of a tensor with block "
                    f"dims {self.shape} is not simulated: {_REPLACE}"
                )
        rest = rest or (slice(None),)
        if rest[0] is Ellipsis:
            rest = (slice(None),) + rest
        return (rest[0],) + tuple(blocks) + tuple(rest[1:])

    def __getitem__(self, key):
        k = self._key(key)
        blocks = k[1 : 1 + self.nblock]
        view = self.under[k]
        if all(isinstance(b, int) or hasattr(b, "__index__") for b in blocks):
            return view  # one block: an ordinary tile (integer dims dropped)
        if any(isinstance(x, Idx) for x in k):
            fail(f"index expressions across several blocks are not simulated: {_REPLACE}")
        # slices over blocks keep them block dims: as many as were sliced, in front
        kept = sum(1 for b in blocks if isinstance(b, slice))
        return BlockTensor(view, kept) if kept else view

    def __setitem__(self, key, value):
        LANGUAGE["assign"](self[key], value)

    def _whole(self, what):
        fail(f"{what} on a whole tensor with block dims {self.shape}: {_REPLACE}")

    def __add__(self, o):
        self._whole("arithmetic")

    __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __add__


class PsumBlocks(BlockTensor):
    """A PSUM tensor with block dims whose blocks are separate tiles, each allocated when it is
    first used (so each has its own live range, and the PSUM banks it takes are counted only
    while it is alive). The old compiler allocated a PSUM tensor's blocks this way: AWS's
    attention tutorial declares ``(seqlen_q // 128, seqlen_kv // 512, par_dim(128), 512)``
    float32 PSUM tensors, far more than PSUM's 8 banks, of which one block per loop iteration
    is alive. Only whole blocks are addressed (``t[i, j]``, ``t[i, j, ip, jf]``)."""

    __slots__ = ("blocks", "tile", "dt", "name", "fill", "tiles", "make")

    def __init__(self, blocks, tile, dtype, name, make):
        self.under = None
        self.nblock = len(blocks)
        self.blocks, self.tile, self.dt, self.name = tuple(blocks), tuple(tile), dtype, name
        self.fill = None  # a value every block starts with (nl.zeros / ones / full)
        self.tiles = {}
        self.make = make  # (block index, tile shape, dtype, name, fill or None) -> a PSUM tile

    @property
    def shape(self):
        return self.blocks + self.tile

    @property
    def dtype(self):
        return self.dt

    @property
    def buffer(self):
        from ..storage import MemoryRegion

        return MemoryRegion.psum

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        return f"PsumBlocks(shape={self.shape}, {len(self.tiles)} block(s) allocated)"

    def _block(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        idx = key[: self.nblock]
        if len(idx) < self.nblock or not all(hasattr(b, "__index__") for b in idx):
            fail(
                f"PSUM tensor with block dims {self.shape}: index every block dim with an "
                f"integer (t[b...] or t[b..., ...]); slices or expressions over its blocks are "
                f"not simulated (each block is its own PSUM tile): {_REPLACE}"
            )
        for d, (b, n) in enumerate(zip(idx, self.blocks, strict=True)):
            if not 0 <= int(b) < n:
                fail(f"block index {int(b)} out of range for block dim {d} of size {n}")
        b = tuple(int(i) for i in idx)
        t = self.tiles.get(b)
        if t is None:
            t = self.tiles[b] = self.make(b, self.tile, self.dt, self.name, self.fill)
        return t, key[self.nblock :]

    def __getitem__(self, key):
        t, rest = self._block(key)
        return t[rest] if rest else t
