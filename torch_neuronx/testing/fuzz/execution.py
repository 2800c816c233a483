"""Running a program on CPU and on the device and comparing what each leaves: metadata,
aliasing, values (exact, or float32-level for 64-bit arithmetic) and statement outcomes."""

from __future__ import annotations

import warnings
from collections.abc import Iterable

import torch

from .program import (
    APPROX_ATOL,
    APPROX_RTOL,
    Failure,
    Program,
    Statement,
    namespace,
    storage_of,
)


def _execute(statements: Iterable[Statement], device: str):
    ns: dict = namespace(device)
    outcomes = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for st in statements:
            try:
                exec(st.code, ns)
                outcomes.append(None)
            except Exception as e:  # the outcome is compared across devices
                outcomes.append(e)
    tensors = {k: v for k, v in ns.items() if isinstance(v, torch.Tensor)}
    return outcomes, tensors


def _compare_values(name: str, c: torch.Tensor, n: torch.Tensor, approx: bool) -> str | None:
    n = n.cpu()
    if approx and not (c.dtype.is_floating_point or c.dtype.is_complex):
        # the bits of 64-bit-arithmetic results seen through an integer view: no tolerance
        # applies to them, so only dtype, shape, strides and aliasing are compared
        return None
    if c.dtype.is_complex:
        c, n = torch.view_as_real(c.resolve_conj()), torch.view_as_real(n.resolve_conj())
    if approx and (c.dtype.is_floating_point):
        # CPU's result as the policy stores it: rounded to float32, so values beyond float32's
        # range are inf on the device (docs/eager.md, "Dtype policy")
        c64, n64 = c.to(torch.float32).double(), n.double()
        same_nan = torch.equal(c64.isnan(), n64.isnan())
        fin = c64.isfinite() & n64.isfinite()
        same_inf = (
            torch.equal(c64[~fin & ~c64.isnan()], n64[~fin & ~c64.isnan()]) if same_nan else False
        )
        scale = c64[fin].abs().max().item() if fin.any() else 1.0
        close = torch.allclose(
            c64[fin], n64[fin], rtol=APPROX_RTOL, atol=APPROX_ATOL * max(1.0, scale)
        )
        if same_nan and same_inf and close:
            return None
        return f"{name}: values differ beyond the float32-level tolerance (64-bit arithmetic)\n  cpu:    {c}\n  neuron: {n}"
    if c.dtype.is_floating_point:
        equal = torch.equal(c.isnan(), n.isnan()) and torch.equal(
            torch.nan_to_num(c, nan=0.0), torch.nan_to_num(n, nan=0.0)
        )
        if equal:
            # bitwise: +0.0 vs -0.0 and NaN payloads aside, equal floats have equal bits
            equal = torch.equal(torch.signbit(c) | c.isnan(), torch.signbit(n) | n.isnan())
    else:
        equal = torch.equal(c, n)
    if equal:
        return None
    return f"{name}: values differ\n  cpu:    {c}\n  neuron: {n}"


def compare(program: Program, device: str = "neuron") -> str | None:
    """Runs the program on CPU and on `device`; returns the first difference, or None."""
    c_out, c_ts = _execute(program.statements, "cpu")
    n_out, n_ts = _execute(program.statements, device)
    for st, ce, ne in zip(program.statements, c_out, n_out, strict=True):
        if (ce is None) != (ne is None) or (ce is not None and type(ce) is not type(ne)):

            def desc(e):
                return "ok" if e is None else f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"

            return f"statement `{st.code}`: cpu {desc(ce)}; {device} {desc(ne)}"
    if set(c_ts) != set(n_ts):
        return f"names differ: cpu {sorted(c_ts)} vs {device} {sorted(n_ts)}"
    groups_c: dict[int, list[str]] = {}
    groups_n: dict[int, list[str]] = {}
    for k in sorted(c_ts):
        c, n = c_ts[k], n_ts[k]
        if n.device.type != device:  # every tensor of a program lives on `dev`
            return f"{k}: on {n.device} on {device}"
        if c.dtype != n.dtype:
            return f"{k}: dtype {n.dtype} on {device}, {c.dtype} on cpu"
        if c.shape != n.shape:
            return f"{k}: shape {tuple(n.shape)} on {device}, {tuple(c.shape)} on cpu"
        if c.numel() > 1 and (c.stride() != n.stride() or c.storage_offset() != n.storage_offset()):
            return (
                f"{k}: strides/offset {n.stride()}/{n.storage_offset()} on {device}, "
                f"{c.stride()}/{c.storage_offset()} on cpu"
            )
        msg = _compare_values(k, c, n, k in program.approx)
        if msg:
            return msg
        groups_c.setdefault(storage_of(c), []).append(k)
        groups_n.setdefault(storage_of(n), []).append(k)
    alias_c = sorted(sorted(g) for g in groups_c.values() if len(g) > 1)
    alias_n = sorted(sorted(g) for g in groups_n.values() if len(g) > 1)
    if alias_c != alias_n:
        return f"storage sharing differs: cpu {alias_c} vs {device} {alias_n}"
    return None


def check(program: Program, device: str = "neuron") -> Failure | None:
    msg = compare(program, device)
    return Failure(program, msg) if msg else None
