"""Random instructions: ``dropout`` (Vector Engine).

Random bits come from the kernel's generator (``nl.random_seed``), else torch's default CPU
generator, as for ``nl.rand``: the hardware's RNG stream is not reproduced, so results match
AWS's in distribution, not bit for bit.
"""

from __future__ import annotations

import torch

from ...runtime.engines import Engine
from .. import dtypes, execution
from ..errors import fail
from ..isa_common import f32, record, scalar_or_vector, unary_operands, write


def dropout(dst, data, prob, name=None):
    """Replace each element of ``data`` by zero with probability ``prob`` (a scalar, or one
    value per partition as a ``(P, 1)`` tile); kept elements are not rescaled (Vector Engine)."""
    ex = execution.begin("dropout")
    unary_operands(ex, "dropout", dst, data)
    if dtypes.normalize(dst.dtype) != dtypes.normalize(data.dtype):
        fail(
            f"nisa.dropout: dst ({dtypes.name(dst.dtype)}) must have the dtype of data "
            f"({dtypes.name(data.dtype)})"
        )
    if not isinstance(prob, (int, float)):
        if dtypes.is_int(data.dtype) and dtypes.normalize(prob.dtype) is not torch.float32:
            fail(
                f"nisa.dropout: with integer data, prob must be float32, got "
                f"{dtypes.name(prob.dtype)}"
            )
        if not dtypes.is_float(prob.dtype):
            fail(f"nisa.dropout: prob must be a float tile, got {dtypes.name(prob.dtype)}")
    p = scalar_or_vector(ex, "dropout", "prob", prob, data)
    record(ex, Engine.vector, dst)
    if ex.compute:
        P = data.partitions
        u = torch.rand((P, data.free_size), generator=ex.rng)
        drop = u < (p.reshape(P, 1) if isinstance(p, torch.Tensor) else p)
        if dtypes.is_float(data.dtype):
            write(dst, f32(data).reshape(P, -1).masked_fill(drop, 0.0))
        else:
            write(dst, data.read().reshape(P, -1).masked_fill(drop, 0))
