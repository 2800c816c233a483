"""Cost of one op at given shapes and dtype, on any generation, without running it.

Used by ``torch-neuronx cost`` and the validation table: the op runs on ``meta`` tensors (shape
inference only) and the result goes through the same model as a recorded op."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from torch_neuronx.runtime import hardware
from torch_neuronx.runtime.engines import Engine

from . import events as ev
from . import roofline
from . import work as wk
from .collectives import collective_cost, normalize
from .target import Target, for_instance

_COLLECTIVES = {
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "broadcast",
    "reduce",
    "all_to_all",
    "barrier",
}

#: friendly names -> (aten op, how to build its arguments from the input tensors)
_ALIASES: dict = {
    "matmul": "mm",
    "linear": "mm",
    "sdpa": "_scaled_dot_product_flash_attention_for_cpu",
    "attention": "_scaled_dot_product_flash_attention_for_cpu",
    "softmax": "_softmax",
    "layer_norm": "native_layer_norm",
    "conv2d": "convolution",
}


def _args_for(base: str, tensors: list) -> tuple:
    if base == "_softmax":
        return (tensors[0], -1, False)
    if base == "native_layer_norm":
        x = tensors[0]
        n = [x.shape[-1]]
        return (
            x,
            n,
            torch.empty(n, dtype=x.dtype, device="meta"),
            torch.empty(n, dtype=x.dtype, device="meta"),
            1e-5,
        )
    if base == "convolution":
        x, w = tensors[0], tensors[1]
        pad = [w.shape[-1] // 2] * (x.dim() - 2)
        return (
            x,
            w,
            None,
            [1] * (x.dim() - 2),
            pad,
            [1] * (x.dim() - 2),
            False,
            [0] * (x.dim() - 2),
            1,
        )
    if base in ("sum", "mean", "amax"):
        return (tensors[0], [-1])
    return tuple(tensors)


def parse_shape(text: str) -> tuple:
    """'4096x4096' -> (4096, 4096); 'scalar' or '' -> ()."""
    text = text.strip().lower()
    if text in ("", "scalar"):
        return ()
    return tuple(int(x) for x in text.replace("*", "x").split("x"))


def parse_dtype(text: str) -> torch.dtype:
    aliases = {
        "bf16": "bfloat16",
        "fp16": "float16",
        "half": "float16",
        "fp32": "float32",
        "float": "float32",
        "fp8": "float8_e4m3fn",
        "fp64": "float64",
        "int": "int32",
    }
    name = aliases.get(text.lower(), text.lower())
    dt = getattr(torch, name, None)
    if not isinstance(dt, torch.dtype):
        raise ValueError(f"unknown dtype {text!r}")
    return dt


def estimate_op(
    op: str,
    shapes: Sequence[tuple],
    dtype: torch.dtype,
    tgt: Target,
    *,
    engine: Engine | str | None = None,
    in_graph: bool = False,
    ranks: int = 2,
) -> ev.Cost:
    """Modeled cost of ``op`` (an ATen op name such as "mm", "add", "_softmax", or "sdpa",
    "conv2d", "layer_norm", or a collective "all_reduce" with ``ranks`` ranks) on inputs of
    ``shapes`` and ``dtype`` on one logical core of ``tgt``."""
    name = normalize(op)
    if name in _COLLECTIVES:
        nbytes = 1
        for s in shapes[0] if shapes else ():
            nbytes *= s
        nbytes *= torch.empty((), dtype=dtype, device="meta").element_size()
        return collective_cost(name, float(nbytes), list(range(ranks)), tgt, in_graph=in_graph)
    base = _ALIASES.get(op, op)
    packet = getattr(torch.ops.aten, base, None)
    if packet is None:
        raise ValueError(
            f"unknown op {op!r}: give an ATen op name (e.g. mm, add, _softmax) or one of "
            f"{', '.join(sorted(_ALIASES))}, or a collective ({', '.join(sorted(_COLLECTIVES))})"
        )
    tensors = [torch.empty(s, dtype=dtype, device="meta") for s in shapes]
    args = _args_for(base, tensors)
    out = packet(*args)
    w = wk.op_work(f"aten::{base}", args, None, out, engine, kind=ev.KERNEL if in_graph else ev.OP)
    return roofline.cost_of(w, tgt.core, in_graph=in_graph)


def per_generation(
    op: str,
    shapes: Sequence[tuple],
    dtype: torch.dtype,
    *,
    engine_of: Callable[[str], Engine | None] | None = None,
    in_graph: bool = False,
    ranks: int = 2,
    instances: Sequence[str] | None = None,
    lnc: int | None = None,
) -> list:
    """[(instance name, LNC, Cost)] for the op on one logical core of each generation's
    representative instance (trn1.32xlarge, trn2.48xlarge, trn3.48xlarge by default)."""
    names = instances or ["trn1.32xlarge", "trn2.48xlarge", "trn3.48xlarge"]
    engine = None
    if engine_of is not None:
        engine = engine_of(f"aten::{_ALIASES.get(op, op)}")
    out = []
    for n in names:
        gen = hardware.instance(n).generation
        use_lnc = lnc if lnc in hardware.CHIPS[gen].lnc_allowed else None
        tgt = for_instance(n, use_lnc)
        out.append(
            (
                n,
                tgt.core.lnc,
                estimate_op(op, shapes, dtype, tgt, engine=engine, in_graph=in_graph, ranks=ranks),
            )
        )
    return out
