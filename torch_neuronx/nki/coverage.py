"""Which elements of a new allocation have been written, while its uninitialised pattern is
still pending.

A new tile or kernel-created HBM tensor holds NaN (0xA5 bytes for integers) until written, so
that a read before a write shows. Filling it at allocation is a pass over memory that a kernel
writing its output tile by tile overwrites entirely; instead the writes are recorded here as
boxes (one ``(start, stop)`` per dimension of the allocation) and the pattern is written into
what no box covers at the first access that is not such a write (a read, a masked or indirect
write, a reinterpreting view) or when the kernel ends. Once the boxes cover every element the
pattern is dropped: no fill at all. A read therefore still sees the pattern wherever nothing
was written before it.
"""

from __future__ import annotations

import itertools
import math

import torch

#: the union check gives up (the pattern is then written into what is left) above this many
#: cells of the grid the boxes' edges cut the allocation into
_MAX_CELLS = 1 << 20
#: up to this many (box, cell) pairs the union is counted in Python, beyond on a torch grid
_PY_CELLS = 4096


class Coverage:
    """The boxes written so far into an allocation of ``shape`` (contiguous, row-major)."""

    __slots__ = ("shape", "strides", "total", "boxes", "volume", "check_at", "dim_of")

    def __init__(self, shape: tuple, strides: tuple):
        self.shape = shape
        self.strides = strides
        self.total = math.prod(shape)
        self.boxes = []
        self.volume = 0  # sum of the boxes' sizes (overlaps counted twice)
        self.check_at = self.total  # the union is checked once the volume reaches this
        # stride -> dim, over the dims longer than 1 (their contiguous strides are distinct)
        self.dim_of = {s: d for d, (n, s) in enumerate(zip(shape, strides, strict=True)) if n > 1}

    def box(self, shape, strides, offset: int):
        """The elements of the view ``(shape, strides, offset)`` as a box of the allocation's
        dims, or None when they are not one (reshaped, stepped, broadcast views)."""
        if not 0 <= offset < self.total:
            return None
        starts = [(offset // s) % n for n, s in zip(self.shape, self.strides, strict=True)]
        stops = [a + 1 for a in starts]
        used = set()
        dim_of = self.dim_of
        for n, s in zip(shape, strides, strict=True):
            if n == 1:
                continue
            d = dim_of.get(s)
            if d is None or d in used:
                return None
            used.add(d)
            stop = starts[d] + n
            if stop > self.shape[d]:
                return None
            stops[d] = stop
        return tuple(zip(starts, stops, strict=True))

    def add(self, box) -> bool:
        """Record a written box; True once every element is covered."""
        self.boxes.append(box)
        self.volume += math.prod(b - a for a, b in box)
        if self.volume < self.check_at:
            return False
        if self._union_full():
            return True
        self.check_at = self.volume + self.total  # overlapping writes: check again later
        return False

    def _union_full(self) -> bool:
        cuts = [
            sorted({0, n, *(b[d][0] for b in self.boxes), *(b[d][1] for b in self.boxes)})
            for d, n in enumerate(self.shape)
        ]
        if math.prod(len(c) - 1 for c in cuts) > _MAX_CELLS:
            return False
        index = [{c: i for i, c in enumerate(cs)} for cs in cuts]
        ranges = [
            [range(index[d][a], index[d][z]) for d, (a, z) in enumerate(b)] for b in self.boxes
        ]
        cells = math.prod(len(c) - 1 for c in cuts)
        if sum(math.prod(len(r) for r in rs) for rs in ranges) <= _PY_CELLS:
            # the usual case, one cell per tile written: a set of cells (no tensor ops)
            return len({c for rs in ranges for c in itertools.product(*rs)}) == cells
        grid = torch.zeros([len(c) - 1 for c in cuts], dtype=torch.bool)
        for rs in ranges:
            grid[tuple(slice(r.start, r.stop) for r in rs)] = True
        return bool(grid.all())

    def fill_rest(self, flat: torch.Tensor, value) -> None:
        """Write ``value`` into every element of ``flat`` no recorded box covers."""
        rest = torch.ones(self.shape, dtype=torch.bool)
        for b in self.boxes:
            rest[tuple(slice(a, z) for a, z in b)] = False
        flat.view(self.shape).masked_fill_(rest, value)
