"""GpSimd gathers and top-k: ``nc_n_gather`` (gather within each partition by flattened
index), ``local_gather`` (each 16-partition slice gathers with its own indices) and ``topk``
(the k largest of each 16-partition "snake").

All run on the GpSimd Engine, so every operand must be in SBUF. Index values are data, so
an out-of-range index is reported when the instruction runs (with the kernel line), where
the hardware's result would be undefined.
"""

from __future__ import annotations

import math

import torch

from ...runtime.engines import Engine
from .. import dtypes, execution
from ..errors import fail
from ..isa_common import SBUF_ONLY, operand, record, same_partitions, write

_GROUP = 16  # partitions per GpSimd core (a topk snake, a local_gather slice)


def nc_n_gather(dst, data, indices, name=None):
    """``dst[p, j] = data[p].flatten()[indices[p].flatten()[j]]`` (GpSimd Engine)."""
    ex = execution.begin("nc_n_gather")
    opc = "nc_n_gather"
    operand(ex, opc, "data", data, SBUF_ONLY)
    operand(ex, opc, "indices", indices, SBUF_ONLY)
    operand(ex, opc, "dst", dst, SBUF_ONLY, write=True)
    same_partitions(opc, "indices", indices, "data", data)
    same_partitions(opc, "dst", dst, "data", data)
    if indices.dtype is not torch.uint32:
        fail(f"nisa.{opc}: indices must be uint32, got {dtypes.name(indices.dtype)}")
    if dtypes.normalize(dst.dtype) != dtypes.normalize(data.dtype):
        fail(
            f"nisa.{opc}: dst ({dtypes.name(dst.dtype)}) must have the dtype of data "
            f"({dtypes.name(data.dtype)})"
        )
    if dst.free_size != indices.free_size:
        fail(
            f"nisa.{opc}: dst has {dst.free_size} elements per partition (shape {dst.shape}) "
            f"but indices has {indices.free_size} (shape {indices.shape}); the free dims of "
            f"indices give the shape of dst"
        )
    # AWS: n = ceil(elements per partition / 512) underlying gather instructions
    record(ex, Engine.gpsimd, dst)
    if ex.compute:
        P = data.partitions
        src = data.read().reshape(P, -1)
        idx = indices.read().to(torch.int64).reshape(P, -1)
        bad = idx >= src.shape[1]
        if bool(bad.any()):
            p, j = (int(v) for v in bad.nonzero()[0])
            fail(
                f"nisa.{opc}: indices[{p}] holds {int(idx[p, j])} at position {j}, past the "
                f"{src.shape[1]} elements of each partition of data {data.shape}"
            )
        write(dst, src.gather(1, idx))


def topk(val_dst, idx_dst, src, n, sorted=False, name=None):  # noqa: A002 - AWS's name
    """The k largest of the first ``n`` elements of each 16-partition snake of ``src``
    (element ``i`` at partition ``i % 16``, column ``i // 16``), k being the free size of
    ``val_dst``; results and their snake indices are written in the same snake layout."""
    ex = execution.begin("topk")
    opc = "topk"
    if ex.target.nc_version < 3:
        fail(f"nisa.topk needs NeuronCore-v3 or newer (Trn2, Trn3); this is {ex.target.label}")
    operand(ex, opc, "src", src, SBUF_ONLY)
    operand(ex, opc, "val_dst", val_dst, SBUF_ONLY, write=True)
    operand(ex, opc, "idx_dst", idx_dst, SBUF_ONLY, write=True)
    same_partitions(opc, "val_dst", val_dst, "src", src)
    same_partitions(opc, "idx_dst", idx_dst, "src", src)
    for role, x in (("src", src), ("val_dst", val_dst)):
        if x.dtype is not dtypes.bfloat16:
            fail(f"nisa.{opc}: {role} must be bfloat16, got {dtypes.name(x.dtype)}")
    if idx_dst.dtype is not torch.uint32:
        fail(f"nisa.{opc}: idx_dst must be uint32, got {dtypes.name(idx_dst.dtype)}")
    if src.partitions % _GROUP:
        fail(
            f"nisa.{opc}: src has {src.partitions} partitions; it must be a multiple of 16 "
            f"(one snake per 16-partition group)"
        )
    if not isinstance(n, int) or isinstance(n, bool) or not 8 <= n < 65536:
        fail(f"nisa.{opc}: n must be an int with 8 <= n < 65536, got {n!r}")
    k = val_dst.free_size
    if not 1 <= k < 32768 or k > n:
        fail(f"nisa.{opc}: k (the free size of val_dst, {k}) must satisfy 1 <= k < 32768, k <= n")
    if idx_dst.free_size != k:
        fail(f"nisa.{opc}: idx_dst must hold k = {k} elements per partition, got {idx_dst.shape}")
    if src.free_size < math.ceil(n / _GROUP):
        fail(
            f"nisa.{opc}: a snake of n = {n} elements needs ceil(n / 16) = "
            f"{math.ceil(n / _GROUP)} columns, but src has {src.free_size} (shape {src.shape})"
        )
    tl = ex.timeline
    seconds = None if tl is None else (4 * n + k) / tl.clock[Engine.gpsimd]  # AWS: 4n + k cycles
    record(ex, Engine.gpsimd, src, seconds=seconds)
    if ex.compute:
        G, P = src.partitions // _GROUP, src.partitions
        cols = math.ceil(n / _GROUP)
        # snake i = column * 16 + partition: transpose each group to read it in order
        v = src.read().float().reshape(G, _GROUP, -1)[:, :, :cols]
        snake = v.transpose(1, 2).reshape(G, -1)[:, :n]
        # each written column is written across all 16 partitions, so the last column's
        # slots past k get the next-ranked results (AWS leaves them unspecified)
        m = min(n, math.ceil(k / _GROUP) * _GROUP)
        vals, idx = snake.topk(m, dim=1, largest=True, sorted=True)
        # results back to the snake layout: result j at partition j % 16, column j // 16
        out_cols = math.ceil(m / _GROUP)
        pad = out_cols * _GROUP - m
        vals = torch.nn.functional.pad(vals, (0, pad)).reshape(G, out_cols, _GROUP)
        idx = torch.nn.functional.pad(idx, (0, pad)).reshape(G, out_cols, _GROUP)
        vals = vals.transpose(1, 2).reshape(P, out_cols)
        idx = idx.transpose(1, 2).reshape(P, out_cols)
        live = torch.zeros(G, out_cols * _GROUP, dtype=torch.bool)
        live[:, :m] = True
        live = live.reshape(G, out_cols, _GROUP).transpose(1, 2).reshape(P, out_cols)
        _write_columns(val_dst, vals, live)
        _write_columns(idx_dst, idx, live)


def _write_columns(dst, cols, live):
    """Write ``cols`` (P, c) into the first c columns of ``dst`` (P, k) where ``live``."""
    P, c = cols.shape
    full = torch.zeros(P, dst.free_size, dtype=cols.dtype)
    mask = torch.zeros(P, dst.free_size, dtype=torch.bool)
    full[:, :c], mask[:, :c] = cols, live
    write(dst, full, mask.reshape(dst.shape))


_ELEMS_PER_INDEX = (1, 2, 4, 8, 16, 32)
_MAX_INDICES_PER_CORE = 4096


def local_gather(dst, src_buffer, index, num_elem_per_idx=1, num_valid_indices=None, name=None):
    """Each 16-partition slice (a GpSimd core) gathers from its own partitions of
    ``src_buffer``: the slice's uint16 ``index`` values, read partition first (column-major),
    are element offsets within each partition, and ``num_elem_per_idx`` contiguous elements
    are read from each; ``dst[p] = concat(src[p, i : i + num_elem_per_idx] for i in indices)``.

    AWS page: https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/nki/api/generated/nki.isa.local_gather.html
    """
    ex = execution.begin("local_gather")
    opc = "local_gather"
    operand(ex, opc, "src_buffer", src_buffer, SBUF_ONLY)
    operand(ex, opc, "index", index, SBUF_ONLY)
    operand(ex, opc, "dst", dst, SBUF_ONLY, write=True)
    same_partitions(opc, "index", index, "src_buffer", src_buffer)
    same_partitions(opc, "dst", dst, "src_buffer", src_buffer)
    P = src_buffer.partitions
    if P % _GROUP:
        fail(
            f"nisa.{opc}: src_buffer has {P} partitions; it must be a multiple of 16 (one "
            f"16-partition slice per GpSimd core)"
        )
    if index.dtype is not torch.uint16:
        fail(f"nisa.{opc}: index must be uint16, got {dtypes.name(index.dtype)}")
    if dtypes.normalize(dst.dtype) != dtypes.normalize(src_buffer.dtype):
        fail(
            f"nisa.{opc}: dst ({dtypes.name(dst.dtype)}) must have the dtype of src_buffer "
            f"({dtypes.name(src_buffer.dtype)}); local_gather does not cast"
        )
    if num_elem_per_idx not in _ELEMS_PER_INDEX or isinstance(num_elem_per_idx, bool):
        fail(
            f"nisa.{opc}: num_elem_per_idx must be one of {_ELEMS_PER_INDEX}, got {num_elem_per_idx!r}"
        )
    per_core = _GROUP * index.free_size  # indices in one 16-partition slice of index
    n = per_core if num_valid_indices is None else num_valid_indices
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= per_core:
        fail(
            f"nisa.{opc}: num_valid_indices must be an int in [1, {per_core}] (the indices in "
            f"a 16-partition slice of index {index.shape}), got {num_valid_indices!r}"
        )
    if n > _MAX_INDICES_PER_CORE:
        fail(f"nisa.{opc}: {n} indices per GpSimd core; at most {_MAX_INDICES_PER_CORE}")
    if dst.free_size != n * num_elem_per_idx:
        fail(
            f"nisa.{opc}: dst must hold num_valid_indices x num_elem_per_idx = {n} x "
            f"{num_elem_per_idx} elements per partition, got {dst.free_size} (shape {dst.shape})"
        )
    record(ex, Engine.gpsimd, dst)
    if ex.compute:
        G = P // _GROUP
        src = src_buffer.read().reshape(P, -1)
        # each core's indices, partition dim first (NumPy order='F'), the first n valid
        idx = index.read().to(torch.int64).reshape(G, _GROUP, -1).transpose(1, 2)
        idx = idx.reshape(G, -1)[:, :n]
        bad = idx + num_elem_per_idx > src.shape[1]
        if bool(bad.any()):
            g, j = (int(v) for v in bad.nonzero()[0])
            fail(
                f"nisa.{opc}: index {int(idx[g, j])} (GpSimd core {g}, position {j}) reads "
                f"{num_elem_per_idx} elements past the {src.shape[1]} of each partition of "
                f"src_buffer {src_buffer.shape} (the hardware's result is undefined)"
            )
        offs = idx[:, :, None] + torch.arange(num_elem_per_idx)  # (G, n, e) element offsets
        offs = offs.reshape(G, 1, -1).expand(G, _GROUP, -1).reshape(P, -1)
        write(dst, src.gather(1, offs))
