"""From an ATen op and its tensors to :class:`~torch_neuronx.perf.events.Work`.

FLOPs come from PyTorch's own counting rules (``torch.utils.flop_counter``'s registry: matmul,
convolution, attention) where they cover the op; the CPU flash-attention ops the emulated core
runs, and a few matrix-vector ops the registry lacks, get formulas of the same kind here.
Every other op is element-wise work: one operation per element of its largest tensor.
Bytes are the sizes of the input and output tensors (what an eager op reads from and writes
to HBM). Works with real, fake and meta tensors alike (only shapes and dtypes are read)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch.utils import flop_counter as _fc

from torch_neuronx.runtime.engines import Engine
from torch_neuronx.runtime.op_names import base_name, split

from . import events as ev

_DTYPE_CLASS = {
    torch.bfloat16: "bf16",
    torch.float16: "bf16",
    torch.float32: "fp32",
    torch.float64: "fp32",  # float64 runs in float32 on neuron
}
for _name in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"):
    if hasattr(torch, _name):
        _DTYPE_CLASS[getattr(torch, _name)] = "fp8"
for _name in ("float4_e2m1fn_x2", "float8_e8m0fnu"):
    if hasattr(torch, _name):
        _DTYPE_CLASS[getattr(torch, _name)] = "mxfp8"


def dtype_class(dtype: torch.dtype) -> str:
    """TensorE rate class of a dtype. Integer and boolean matmuls are not TensorE input types
    on Trn2/Trn3 [NKI2]; they are costed at the FP32 rate (assumption)."""
    return _DTYPE_CLASS.get(dtype, "fp32")


def element_bits(dtype: torch.dtype) -> int:
    if dtype == torch.float64:
        return 32  # computed in float32 on the NeuronCore
    try:
        return max(8, torch.empty((), dtype=dtype, device="meta").element_size() * 8)
    except Exception:  # noqa: BLE001 - exotic dtypes: treat as 32-bit
        return 32


@functools.cache
def _bits(dtype: torch.dtype) -> int:
    return element_bits(dtype)


def tensors_in(values: Iterable[Any]) -> list[torch.Tensor]:
    out: list[torch.Tensor] = []
    for v in values:
        if isinstance(v, torch.Tensor):
            out.append(v)
        elif isinstance(v, (list, tuple)):
            out.extend(x for x in v if isinstance(x, torch.Tensor))
    return out


def nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


# --- FLOP formulas ---------------------------------------------------------------------------
def _shape(t):
    return tuple(t.shape) if isinstance(t, torch.Tensor) else t


def _sdpa_cpu(q, k, v, *args, **kwargs):
    return _fc.sdpa_flop_count(_shape(q), _shape(k), _shape(v))


def _sdpa_cpu_backward(grad_out, q, k, v, *args, **kwargs):
    return _fc.sdpa_backward_flop_count(_shape(grad_out), _shape(q), _shape(k), _shape(v))


def _mv(a, b, *args, **kwargs):
    m, k = a.shape
    return 2 * m * k


def _addmv(bias, a, b, *args, **kwargs):
    return _mv(a, b)


def _dot(a, b, *args, **kwargs):
    return 2 * a.numel()


def _addbmm(bias, a, b, *args, **kwargs):
    bsz, m, k = a.shape
    return 2 * bsz * m * k * b.shape[-1]


def _grouped_mm(a, b, *args, out=None, **kwargs):
    # every output element is a dot product over a's last dimension
    return 2 * (out.numel() if isinstance(out, torch.Tensor) else 0) * a.shape[-1]


_EXTRA: dict[str, Callable] = {
    "_scaled_dot_product_flash_attention_for_cpu": _sdpa_cpu,
    "_scaled_dot_product_flash_attention_for_cpu_backward": _sdpa_cpu_backward,
    "mv": _mv,
    "addmv": _addmv,
    "dot": _dot,
    "vdot": _dot,
    "addbmm": _addbmm,
    "_grouped_mm": _grouped_mm,
}
_ATTENTION = {
    "_scaled_dot_product_flash_attention_for_cpu",
    "_scaled_dot_product_flash_attention_for_cpu_backward",
    "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_cudnn_attention",
    "_scaled_dot_product_efficient_attention_backward",
    "_scaled_dot_product_flash_attention_backward",
    "_scaled_dot_product_cudnn_attention_backward",
    "_flash_attention_forward",
    "_flash_attention_backward",
    "_efficient_attention_forward",
    "_efficient_attention_backward",
}
_CONV = {
    "convolution",
    "_convolution",
    "convolution_overrideable",
    "_slow_conv2d_forward",
    "convolution_backward",
    "convolution_backward_overrideable",
    "cudnn_convolution",
}


@functools.lru_cache(maxsize=4096)
def flop_formula(op_name: str) -> Callable | None:
    """PyTorch's registered FLOP formula for an ATen op (or ours for the few it lacks)."""
    base = base_name(op_name)
    if base in _EXTRA:
        return _EXTRA[base]
    packet = getattr(torch.ops.aten, base, None)
    if packet is None:
        return None
    return _fc.flop_registry.get(packet)


def _split_kwarg_only(op_name: str, args: tuple) -> tuple:
    """The driver passes an op's boxed arguments positionally; PyTorch's FLOP formulas take the
    schema's keyword-only arguments (e.g. addmm's beta and alpha) by name. (evaluate, issue 14:
    eager addmm was counted as element-wise work because the formula rejected them.)"""
    _, name, overload = split(op_name)
    try:
        schema = getattr(getattr(torch.ops.aten, name), overload or "default")._schema
    except AttributeError:
        return args, {}
    n_pos = sum(1 for a in schema.arguments if not a.kwarg_only)
    if len(args) <= n_pos:
        return args, {}
    kw = {a.name: v for a, v in zip(schema.arguments[n_pos:], args[n_pos:])}
    return tuple(args[:n_pos]), kw


def count_flops(op_name: str, args: tuple, kwargs: dict, out: Any) -> float | None:
    """FLOPs of a TensorE op from the registry; None when the registry has no rule."""
    f = flop_formula(op_name)
    if f is None:
        return None
    base = base_name(op_name)
    if not kwargs and base not in _EXTRA:
        args, kwargs = _split_kwarg_only(op_name, tuple(args))
    if base in _EXTRA:
        if base == "_grouped_mm":
            return float(f(*args, out=out[0] if isinstance(out, (list, tuple)) else out))
        return float(f(*args, **kwargs))
    if isinstance(out, (list, tuple)) and len(out) == 1:
        # the driver hands an op's results as a list; a one-result op's formula reads the
        # tensor's shape (the convolution's output size: evaluate, issue 25, a [out] list
        # made it count a 16x16 output as 1x1, 256x low)
        out = out[0]
    return float(f(*args, **(kwargs or {}), out_val=out))


# --- GEMM geometry for the TensorE tile rule ---------------------------------------------------
def mm_dims(op_name: str, args: tuple) -> tuple:
    """((batch, M, K, N),) for plain matmuls; () when the op is not one."""
    base = base_name(op_name).rstrip("_")
    t = [a for a in args if isinstance(a, torch.Tensor)]
    try:
        if base == "mm" and len(t) >= 2:
            (m, k), n = t[0].shape, t[1].shape[1]
            return ((1, m, k, n),)
        if base == "addmm" and len(t) >= 3:
            (m, k), n = t[1].shape, t[2].shape[1]
            return ((1, m, k, n),)
        if base == "bmm" and len(t) >= 2:
            (b, m, k), n = t[0].shape, t[1].shape[2]
            return ((b, m, k, n),)
        if base in ("baddbmm", "addbmm") and len(t) >= 3:
            (b, m, k), n = t[1].shape, t[2].shape[2]
            return ((b, m, k, n),)
        if base in ("mv", "addmv") and len(t) >= 2:
            a = t[0] if base == "mv" else t[1]
            m, k = a.shape
            return ((1, m, k, 1),)
    except (ValueError, IndexError):
        return ()
    return ()


#: where each attention op keeps ``is_causal`` among its positional arguments
_CAUSAL_ARG = {
    "_scaled_dot_product_flash_attention_for_cpu": 4,
    "_scaled_dot_product_flash_attention": 4,
    "_scaled_dot_product_flash_attention_for_cpu_backward": 7,
}


def causal_share(op_name: str, args: tuple, kwargs: dict | None) -> float:
    """Share of an attention op's FLOPs a flash-attention kernel computes. A causal mask over
    equal query and key lengths leaves the blocks above the diagonal fully masked; flash-attention
    kernels (the FlashAttention algorithm, and the NKI attention kernels that follow it) skip
    them, computing the diagonal 128-row blocks in full: (1 + 128 / L) / 2 of PyTorch's count.
    ASSUMPTION: 128-row blocks (one per SBUF partition set)."""
    base = base_name(op_name)
    if base not in _CAUSAL_ARG:
        return 1.0
    causal = (kwargs or {}).get("is_causal")
    if causal is None:
        i = _CAUSAL_ARG[base]
        causal = args[i] if len(args) > i else False
    t = [a for a in args if isinstance(a, torch.Tensor)]
    if not causal or len(t) < 3:
        return 1.0
    q, k = (t[1], t[2]) if base.endswith("backward") else (t[0], t[1])
    lq, lk = int(q.shape[-2]), int(k.shape[-2])
    if lq != lk or lq <= 128:
        return 1.0
    return (1 + 128 / lq) / 2


def contractions(op_name: str, args: tuple) -> tuple:
    """(share of FLOPs, contraction length) for attention and convolution."""
    base = base_name(op_name)
    t = [a for a in args if isinstance(a, torch.Tensor)]
    try:
        if base in _ATTENTION:
            q = t[1] if base.endswith("backward") else t[0]
            k = t[2] if base.endswith("backward") else t[1]
            d, s_k = int(q.shape[-1]), int(k.shape[-2])
            return ((0.5, d), (0.5, s_k))  # QK^T contracts over the head dim, PV over keys
        if base in _CONV:
            w = t[2] if base.startswith("convolution_backward") else t[1]
            return ((1.0, int(math.prod(w.shape[1:]))),)  # Cin/groups x kernel size
    except (IndexError, ValueError):
        return ()
    return ()


# --- element-wise passes ---------------------------------------------------------------------
#: engine passes over the data for ops that are more than one element-wise instruction
#: (e.g. softmax: max, exp-and-sum, scale). ASSUMPTION: counted from the usual lowering.
_PASSES = {
    "_softmax": 3,
    "_log_softmax": 3,
    "_softmax_backward_data": 2,
    "_log_softmax_backward_data": 2,
    "native_layer_norm": 3,
    "native_layer_norm_backward": 4,
    "_fused_rms_norm": 2,
    "_fused_rms_norm_backward": 3,
    "native_batch_norm": 3,
    "native_batch_norm_backward": 4,
    "native_group_norm": 3,
    "native_group_norm_backward": 4,
    "_fused_adam_": 12,
    "_fused_adamw_": 12,
    "_fused_sgd_": 3,
    "sort": 8,
    "topk": 4,
    "cumsum": 2,
}


def elementwise(
    op_name: str, engine: Engine, ins: list[torch.Tensor], outs: list[torch.Tensor]
) -> tuple:
    """((engine, elements, tensor inputs, bits),) for one element-wise op."""
    elements = max([t.numel() for t in ins + outs] or [0])
    n_in = sum(1 for t in ins if t.numel() > 1)
    dts = [t.dtype for t in ins + outs]
    bits = max((_bits(d) for d in dts), default=32)
    passes = _PASSES.get(base_name(op_name), 1)
    return ((engine, float(elements * passes), max(1, min(n_in, 2)), bits),)


def op_work(
    op_name: str,
    args: tuple,
    kwargs: dict | None,
    outputs: Any,
    engine: Engine | str | None,
    kind: str = ev.OP,
) -> ev.Work:
    """The work of one ATen op given its arguments and results (tensors of any kind)."""
    ins = tensors_in(args) + tensors_in((kwargs or {}).values())
    outs = tensors_in(outputs if isinstance(outputs, (list, tuple)) else (outputs,))
    eng = Engine.parse(engine)
    flops = None
    if eng in (None, Engine.tensor):
        try:
            flops = count_flops(op_name, tuple(args), kwargs or {}, outputs)
            if flops is not None:
                flops *= causal_share(op_name, tuple(args), kwargs)
        except Exception:  # noqa: BLE001 - a formula that cannot read these args: element-wise
            flops = None
        if flops is not None:
            eng = Engine.tensor
        elif eng is None:
            eng = Engine.vector
    total = float(sum(nbytes(t) for t in ins) + sum(nbytes(t) for t in outs))
    dts = [t.dtype for t in ins if t.is_floating_point()] or [t.dtype for t in ins + outs]
    dcls = dtype_class(dts[0]) if dts else "fp32"
    shapes = ", ".join("x".join(str(int(s)) for s in t.shape) or "scalar" for t in ins[:4])
    if eng == Engine.tensor and flops is not None:
        return ev.Work(
            op_name,
            kind,
            Engine.tensor,
            flops=flops,
            bytes=total,
            dtype=dcls,
            mm_dims=mm_dims(op_name, tuple(args)),
            contractions=contractions(op_name, tuple(args)),
            ops=(op_name,),
            shapes=shapes,
        )
    if eng == Engine.tensor:  # a TensorE op PyTorch has no FLOP rule for: count it element-wise
        eng = Engine.vector
    elem = () if eng == Engine.dma else elementwise(op_name, eng, ins, outs)
    # one operation per element of the largest tensor (passes are engine work, not FLOPs)
    flops = float(max([t.numel() for t in ins + outs] or [0])) if elem else 0.0
    return ev.Work(
        op_name,
        kind,
        eng,
        flops=flops,
        bytes=total,
        dtype=dcls,
        elem_work=elem,
        ops=(op_name,),
        shapes=shapes,
    )
