"""SPMD launch grids: ``kernel[4, 2]``, and the core-placement annotations ``nl.nc(n)`` and
``nl.spmd_dim(...)`` (``kernel[nl.spmd_dim(nl.nc(2), 2), 2]``).

A grid dimension is an int, ``nl.nc(n)`` (n programs, one per physical NeuronCore of the
logical core) or ``nl.spmd_dim(d0, d1, ...)`` (a dimension of size ``d0 * d1 * ...`` tiled
into sub-dimensions, row-major, at most one of them an ``nl.nc``). Programs still run one after
another in program order; the annotation decides which physical core's engines each program's
instructions go to on the modeled schedule (without one, programs go round-robin).
"""

from __future__ import annotations

import math

from .errors import NkiValidationError


class nc:  # noqa: N801 - NKI's name
    """``nl.nc(n)``: a launch-grid dimension of ``n`` programs spread over physical cores."""

    def __init__(self, n):
        if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
            raise NkiValidationError(f"nl.nc({n!r}): the size must be a positive integer")
        self.size = n

    def __repr__(self):
        return f"nl.nc({self.size})"


class spmd_dim:  # noqa: N801 - NKI's name
    """``nl.spmd_dim(d0, d1, ...)``: one launch-grid dimension of size ``d0 * d1 * ...`` whose
    index is split row-major into the sub-dimensions (ints or one ``nl.nc``)."""

    def __init__(self, *dims):
        if not dims:
            raise NkiValidationError("nl.spmd_dim() needs at least one sub-dimension")
        for d in dims:
            if not isinstance(d, nc) and (not isinstance(d, int) or isinstance(d, bool) or d <= 0):
                raise NkiValidationError(
                    f"nl.spmd_dim{dims!r}: each sub-dimension must be a positive integer or "
                    f"nl.nc(n)"
                )
        if sum(isinstance(d, nc) for d in dims) > 1:
            raise NkiValidationError(f"nl.spmd_dim{dims!r}: at most one nl.nc sub-dimension")
        self.dims = dims
        self.size = math.prod(d.size if isinstance(d, nc) else d for d in dims)

    def core_of(self, i: int):
        """The physical core of index ``i`` along this dimension (None: no nl.nc)."""
        later = 1
        for d in reversed(self.dims):
            if isinstance(d, nc):
                return (i // later) % d.size
            later *= d
        return None

    def __repr__(self):
        return f"nl.spmd_dim({', '.join(map(repr, self.dims))})"


class Grid(tuple):
    """A launch grid: its sizes, plus the core placement of its annotated dimension."""

    placed: tuple = ()

    def core(self, ids: tuple, index: int) -> int:
        """The physical core of the program ``ids`` (round-robin ``index`` if unannotated)."""
        for axis, dim in self.placed:
            c = dim.core_of(ids[axis]) if isinstance(dim, spmd_dim) else ids[axis]
            if c is not None:
                return c
        return index


def normalize(grid) -> Grid:
    if not isinstance(grid, tuple):
        grid = (grid,)
    sizes, placed = [], []
    for axis, g in enumerate(grid):
        if isinstance(g, (nc, spmd_dim)):
            placed.append((axis, g))
            g = g.size
        if not isinstance(g, int) or isinstance(g, bool) or g <= 0:
            raise NkiValidationError(
                f"SPMD launch grid {grid!r}: every dimension must be a positive integer, "
                f"nl.nc(n) or nl.spmd_dim(...)"
            )
        sizes.append(g)
    if len(placed) > 1:
        raise NkiValidationError(
            f"SPMD launch grid {grid!r}: at most one dimension may carry nl.nc core placement"
        )
    out = Grid(sizes)
    out.placed = tuple(placed)
    return out
