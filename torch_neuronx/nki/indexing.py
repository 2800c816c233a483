"""Index expressions and masks of the legacy NKI language (``nl.arange``, ``nl.mgrid``).

``ix = nl.arange(128)[:, None]`` is an affine index over the partition dim; arithmetic on it
(``i * 128 + ix``) stays an index expression, comparisons give a :class:`Mask`
(``mask=(i * 128 + ix < n)``). Both are small integer/bool torch tensors with numpy
broadcasting, evaluated once per instruction (vectorised).
"""

from __future__ import annotations

import numbers

import torch

from .errors import fail


def host():
    """Index expressions are compile-time values: real host tensors even while a kernel runs
    on fake tensors (shapes-only mode under torch.compile tracing)."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    return unset_fake_temporarily()


class Mask:
    """A predicate over an instruction's index grid (bool tensor, broadcastable)."""

    __slots__ = ("t",)

    def __init__(self, t: torch.Tensor):
        self.t = t

    def __and__(self, o):
        with host():
            return Mask(self.t & _mask(o))

    __rand__ = __and__

    def __or__(self, o):
        with host():
            return Mask(self.t | _mask(o))

    __ror__ = __or__

    def __xor__(self, o):
        with host():
            return Mask(self.t ^ _mask(o))

    def __invert__(self):
        with host():
            return Mask(~self.t)

    def __bool__(self):
        raise TypeError("a mask is a predicate over tile elements, not a Python bool")

    def __repr__(self):
        return f"Mask(shape={tuple(self.t.shape)}, true={int(self.t.sum())})"


def _mask(o):
    if isinstance(o, Mask):
        return o.t
    if isinstance(o, bool):
        with host():
            return torch.tensor(o)
    fail(f"cannot combine a mask with {o!r}")


def _val(o):
    if isinstance(o, Idx):
        return o.t
    if isinstance(o, numbers.Integral):  # NumPy integers too (a bound computed with NumPy)
        return int(o)
    fail(f"index expressions combine with integers and other index expressions, not {o!r}")


class Idx:
    """An affine index expression (integer tensor with numpy broadcasting)."""

    __slots__ = ("t", "grid")

    def __init__(self, t: torch.Tensor, grid=None):
        self.t = t
        # the full shape of the nl.mgrid this expression comes from: NKI's mgrid is dense, so
        # an expression of some of its axes (``3 * g.y + g.z``) still spans the whole grid
        # where that matters (the old ``nisa.iota(expr)``); indexing uses the open form
        self.grid = grid

    def _new(self, t, o=None):
        return Idx(t, self.grid if self.grid is not None else getattr(o, "grid", None))

    def __getitem__(self, key):  # ix[:, None] / ix[None, :]
        with host():
            return self._new(self.t[key])

    @property
    def shape(self):
        return tuple(self.t.shape)

    def __add__(self, o):
        with host():
            return self._new(self.t + _val(o), o)

    __radd__ = __add__

    def __sub__(self, o):
        with host():
            return self._new(self.t - _val(o), o)

    def __rsub__(self, o):
        with host():
            return self._new(_val(o) - self.t, o)

    def __mul__(self, o):
        with host():
            return self._new(self.t * _val(o), o)

    __rmul__ = __mul__

    def __floordiv__(self, o):
        with host():
            return self._new(torch.div(self.t, _val(o), rounding_mode="floor"), o)

    def __mod__(self, o):
        with host():
            return self._new(torch.remainder(self.t, _val(o)), o)

    def __neg__(self):
        with host():
            return self._new(-self.t)

    def __lt__(self, o):
        with host():
            return Mask(self.t < _val(o))

    def __le__(self, o):
        with host():
            return Mask(self.t <= _val(o))

    def __gt__(self, o):
        with host():
            return Mask(self.t > _val(o))

    def __ge__(self, o):
        with host():
            return Mask(self.t >= _val(o))

    def __eq__(self, o):  # noqa: D105 - a predicate, as in NKI
        with host():
            return Mask(self.t == _val(o))

    def __ne__(self, o):
        with host():
            return Mask(self.t != _val(o))

    __hash__ = None

    def __repr__(self):
        return f"Idx(shape={self.shape})"


def arange(start, stop=None, step=1) -> Idx:
    """``nl.arange``: a 1-D index expression (add ``[:, None]`` / ``[None, :]`` for an axis)."""
    if stop is None:
        start, stop = 0, start
    with host():
        return Idx(torch.arange(int(start), int(stop), int(step), dtype=torch.int64))


class _MGrid:
    """``nl.mgrid[0:128, 0:512]``: one index expression per axis, broadcastable (open grid)."""

    def __getitem__(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        n = len(key)
        out = []
        for d, k in enumerate(key):
            if not isinstance(k, slice):
                fail("nl.mgrid takes slices, e.g. nl.mgrid[0:128, 0:512]")
            start = 0 if k.start is None else int(k.start)
            step = 1 if k.step is None else int(k.step)
            with host():
                t = torch.arange(start, int(k.stop), step, dtype=torch.int64)
            shape = [1] * n
            shape[d] = t.numel()
            out.append(t.reshape(shape))
        if n == 1:
            return Idx(out[0])
        full = tuple(int(t.numel()) for t in out)
        return _Grid(Idx(t, full) for t in out)


class _Grid(tuple):
    """``nl.mgrid[...]`` with several axes: unpacks as a tuple, and names its axes as the
    pre-0.2 language did (``g.p`` the partition axis, ``g.x``, ``g.y``, ``g.z`` the free ones;
    e.g. ``i = nl.mgrid[0:128, 0:512]; t[i.p, i.x]``)."""

    __slots__ = ()

    def _axis(self, k, name):
        if k >= len(self):
            fail(f"nl.mgrid: .{name} names axis {k}, the grid has {len(self)} axes")
        return self[k]

    p = property(lambda self: self._axis(0, "p"))
    x = property(lambda self: self._axis(1, "x"))
    y = property(lambda self: self._axis(2, "y"))
    z = property(lambda self: self._axis(3, "z"))


mgrid = _MGrid()


def ds(start, size):
    """``nl.ds(start, size)``: the slice ``start:start + size``."""
    if not isinstance(start, int) or not isinstance(size, int):
        fail("nl.ds with a runtime (register) start is not simulated; use integers")
    return slice(start, start + size)


def mask_tensor(mask, shape):
    """The bool tensor of ``mask`` over an instruction's grid ``shape`` (None: no mask)."""
    if mask is None:
        return None
    if isinstance(mask, Mask):
        t = mask.t
    elif isinstance(mask, torch.Tensor) and mask.dtype == torch.bool:
        t = mask
    elif isinstance(mask, bool):
        t = torch.tensor(mask)
    else:
        fail(f"mask must be a predicate on nl.arange/nl.mgrid expressions, got {mask!r}")
    if t.dim() < len(shape):
        t = t.reshape((1,) * (len(shape) - t.dim()) + tuple(t.shape))
    try:
        return torch.broadcast_to(t, shape)
    except RuntimeError:
        fail(
            f"mask of shape {tuple(t.shape)} does not broadcast to the instruction's tile "
            f"shape {tuple(shape)}"
        )
