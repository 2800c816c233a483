"""``nc_stream_shuffle``: cross-partition data movement within each 32-partition quadrant
(Vector Engine): output partition ``i`` of a quadrant copies input partition
``shuffle_mask[i]`` of the same quadrant; 255 leaves it unmodified.

AWS page: https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/nki/api/generated/nki.isa.nc_stream_shuffle.html
"""

from __future__ import annotations

import math

import torch

from ...runtime.engines import Engine
from .. import dtypes, execution
from ..errors import fail
from ..isa_common import ON_CHIP, operand, record, same_free, write

_QUAD = 32
_KEEP = 255  # mask value: leave the output partition unmodified
# start partitions allowed for each number of active partitions (AWS's hardware rules)
_STARTS = {32: (0, 32, 64, 96), 64: (0, 64), 96: (0,), 128: (0,)}


def _start_partition(t) -> int:
    """The partition a view starts at within its tile (tiles are partition-major)."""
    st = t.storage
    per = st.partition_elems * dtypes.itemsize(st.dtype) // dtypes.itemsize(t.dtype)
    return t.offset // per if per else 0


def nc_stream_shuffle(dst, src, shuffle_mask, name=None):
    """``dst[q * 32 + i] = src[q * 32 + shuffle_mask[i]]`` for each quadrant ``q`` that ``dst``
    reaches; in place allowed (``src`` is read before ``dst`` is written)."""
    ex = execution.begin("nc_stream_shuffle")
    opc = "nc_stream_shuffle"
    operand(ex, opc, "src", src, ON_CHIP)
    operand(ex, opc, "dst", dst, ON_CHIP, write=True)
    if dtypes.normalize(dst.dtype) != dtypes.normalize(src.dtype):
        fail(
            f"nisa.{opc}: dst ({dtypes.name(dst.dtype)}) must have the dtype of src "
            f"({dtypes.name(src.dtype)})"
        )
    same_free(opc, "dst", dst, "src", src)
    mask = list(shuffle_mask) if isinstance(shuffle_mask, (list, tuple)) else None
    if mask is None or len(mask) != _QUAD:
        fail(f"nisa.{opc}: shuffle_mask must be a list of 32 ints, got {shuffle_mask!r}")
    for i, m in enumerate(mask):
        if not isinstance(m, int) or isinstance(m, bool) or not (0 <= m < _QUAD or m == _KEEP):
            fail(
                f"nisa.{opc}: shuffle_mask[{i}] is {m!r}; each entry is a source partition in "
                f"[0, 32) or 255 (leave the output partition unmodified)"
            )
    active = math.ceil(max(src.partitions, dst.partitions) / _QUAD) * _QUAD
    for role, t in (("src", src), ("dst", dst)):
        start = _start_partition(t)
        if start not in _STARTS[active]:
            fail(
                f"nisa.{opc}: {role} starts at partition {start}; with {active} active "
                f"partitions the start must be one of {_STARTS[active]}"
            )
    Pd, Ps = dst.partitions, src.partitions
    out_p = torch.arange(Pd)
    m = torch.tensor(mask)[out_p % _QUAD]
    keep = m == _KEEP
    src_p = (out_p // _QUAD) * _QUAD + torch.where(keep, 0, m)
    reads_past = (~keep) & (src_p >= Ps)
    if bool(reads_past.any()):
        i = int(reads_past.nonzero()[0])
        fail(
            f"nisa.{opc}: output partition {i} copies partition {int(src_p[i])} of src, which "
            f"has {Ps} partitions"
        )
    record(ex, Engine.vector, dst)
    if ex.compute:
        s = src.read().reshape(Ps, -1)
        v = s[src_p.clamp(max=Ps - 1)].clone()  # read everything first: in place is allowed
        rows = (~keep).reshape((Pd,) + (1,) * (len(dst.shape) - 1)).expand(dst.shape)
        write(dst, v.reshape(dst.shape), rows)
