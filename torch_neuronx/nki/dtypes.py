"""NKI data types as torch dtypes.

Every NKI dtype that torch can store *is* the torch dtype (``nl.bfloat16 is torch.bfloat16``),
so kernel code can pass either. Two NKI types have no torch twin:

- ``tfloat32`` is stored as float32; the Tensor Engine reads it with a 10-bit mantissa.
- ``float8_e4m3`` (legacy IEEE-style e4m3 with infinities) is stored as torch's
  ``float8_e4m3fn`` (no infinities, max 448): values that would be inf saturate to NaN.

The packed MX types (``float8_e5m2_x4``, ``float8_e4m3fn_x4``: four fp8 values in 32 bits;
``float4_e2m1fn_x4``: four fp4 values in 16 bits) are stored as their bits (int32 / int16,
value ``i`` of an element in byte ``i`` / nibble ``i``, little end first). Only DMA, copies of
the same type, ``nc_matmul_mx`` and ``quantize_mx`` use them (isa/mx.py decodes them).
"""

from __future__ import annotations

import torch

from . import numpy_names
from .errors import NkiValidationError


class NkiOnlyDType:
    """An NKI dtype without an exact torch counterpart: stored as ``storage``."""

    def __init__(self, name: str, storage: torch.dtype | None, bits: int, packed=None):
        self.name = name
        self.storage = storage
        self.bits = bits
        self.packed = packed  # MX x4 types: the element type of the four packed values

    def __repr__(self) -> str:
        return f"nl.{self.name}"

    @property
    def itemsize(self) -> int:
        return self.bits // 8

    @property
    def is_floating_point(self) -> bool:
        return True


bool_ = torch.bool
int8 = torch.int8
int16 = torch.int16
int32 = torch.int32
uint8 = torch.uint8
uint16 = torch.uint16
uint32 = torch.uint32
float16 = torch.float16
float32 = torch.float32
bfloat16 = torch.bfloat16
tfloat32 = NkiOnlyDType("tfloat32", torch.float32, 32)
float8_e4m3 = NkiOnlyDType("float8_e4m3", torch.float8_e4m3fn, 8)
float8_e4m3fn = torch.float8_e4m3fn
float8_e5m2 = torch.float8_e5m2
float8_e8m0fnu = torch.float8_e8m0fnu
float8_e5m2_x4 = NkiOnlyDType("float8_e5m2_x4", torch.int32, 32, packed="float8_e5m2")
float8_e4m3fn_x4 = NkiOnlyDType("float8_e4m3fn_x4", torch.int32, 32, packed="float8_e4m3fn")
float4_e2m1fn_x4 = NkiOnlyDType("float4_e2m1fn_x4", torch.int16, 16, packed="float4_e2m1fn")

#: the packed microscaling (OCP MX) types: four values per element
MX_PACKED = (float8_e5m2_x4, float8_e4m3fn_x4, float4_e2m1fn_x4)

_BY_NAME = {
    "bool": bool_,
    "bool_": bool_,
    "int8": int8,
    "int16": int16,
    "int32": int32,
    "uint8": uint8,
    "uint16": uint16,
    "uint32": uint32,
    "float16": float16,
    "float32": float32,
    "bfloat16": bfloat16,
    "tfloat32": tfloat32,
    "float8_e4m3": float8_e4m3,
    "float8_e4m3fn": float8_e4m3fn,
    "float8_e5m2": float8_e5m2,
    "float8_e8m0fnu": float8_e8m0fnu,
    "float8_e5m2_x4": float8_e5m2_x4,
    "float8_e4m3fn_x4": float8_e4m3fn_x4,
    "float4_e2m1fn_x4": float4_e2m1fn_x4,
}

#: dtypes an HBM argument may have (what the NeuronCore's engines and DMA can move)
SUPPORTED_TORCH = frozenset(
    {
        torch.bool,
        torch.int8,
        torch.int16,
        torch.int32,
        torch.uint8,
        torch.uint16,
        torch.uint32,
        torch.float16,
        torch.float32,
        torch.bfloat16,
        torch.float8_e4m3fn,
        torch.float8_e5m2,
        torch.float8_e8m0fnu,
    }
)

FP8 = frozenset({torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e8m0fnu})


def normalize(dtype):
    """The NKI dtype for ``dtype`` (a torch dtype, an NKI-only dtype or a name)."""
    alias = getattr(dtype, "_nki_torch_dtype", None)  # legacy/bfloat16.py: old nl.bfloat16
    if alias is not None:
        return alias
    if dtype in SUPPORTED_TORCH:
        return dtype
    if isinstance(dtype, torch.dtype):
        if dtype not in SUPPORTED_TORCH:
            raise NkiValidationError(
                f"dtype {dtype} is not an NKI data type (supported: bool, int8/16/32, uint8/16/32, "
                f"float16, bfloat16, float32, tfloat32, float8_e4m3/e4m3fn/e5m2/e8m0fnu)"
            )
        return dtype
    if isinstance(dtype, NkiOnlyDType):
        return dtype
    if isinstance(dtype, str):
        name = dtype.replace("nl.", "")
        if name in _BY_NAME:
            return _BY_NAME[name]
    np_name = numpy_names.numpy_dtype_name(dtype)
    if np_name is not None:
        spelling, nki_name = np_name
        if nki_name is not None and numpy_names.legacy_active():
            return _BY_NAME[nki_name]  # a neuronxcc.nki kernel: NumPy dtypes are its spelling
        from .errors import fail

        fail(
            f"{spelling} is a NumPy dtype, the neuronxcc.nki (pre-0.2) spelling; NKI 0.2+ takes "
            + (f"nl.{nki_name}" if nki_name else "an nl dtype (nl.float32, nl.bfloat16, ...)")
            + " (or run the kernel unchanged with torch_neuronx.nki.legacy)"
        )
    raise NkiValidationError(f"{dtype!r} is not an NKI data type")


def storage_dtype(dtype) -> torch.dtype:
    """The torch dtype that holds values of NKI dtype ``dtype``."""
    d = normalize(dtype)
    return d.storage if isinstance(d, NkiOnlyDType) else d


_ITEMSIZE = {}


def itemsize(dtype) -> int:
    n = _ITEMSIZE.get(dtype)
    if n is None:
        n = _ITEMSIZE[dtype] = normalize(dtype).itemsize
    return n


def is_float(dtype) -> bool:
    d = normalize(dtype)
    return isinstance(d, NkiOnlyDType) or d.is_floating_point


def is_int(dtype) -> bool:
    d = normalize(dtype)
    return not isinstance(d, NkiOnlyDType) and not d.is_floating_point and d is not torch.bool


def name(dtype) -> str:
    d = normalize(dtype)
    if isinstance(d, NkiOnlyDType):
        return d.name
    return str(d).replace("torch.", "")


def is_packed_mx(dtype) -> bool:
    """One of the packed MX types (``float8_e5m2_x4``, ``float8_e4m3fn_x4``, ``float4_e2m1fn_x4``)."""
    return type(dtype) is NkiOnlyDType and dtype.packed is not None


def is_fp32_class(dtype) -> bool:
    """float32 or tfloat32 (the Tensor Engine pairs them only with each other)."""
    d = normalize(dtype)
    return d is torch.float32 or d is tfloat32


#: uninitialised on-chip memory: NaN for floats, this byte pattern for integers (0xA5 in
#: every byte, e.g. int32 -1515870811) so that reads of unwritten memory stand out
UNINIT_BYTE = 0xA5


def uninit_value(dtype):
    v = _UNINIT.get(dtype, _UNINIT)
    if v is _UNINIT:
        v = _UNINIT[dtype] = _uninit_value(dtype)
    return v


_UNINIT: dict = {}


def _uninit_value(dtype):
    d = storage_dtype(dtype)
    if d.is_floating_point:
        return float("nan")
    if d is torch.bool:
        return True
    nbytes = torch.empty((), dtype=d).element_size()
    raw = int.from_bytes(bytes([UNINIT_BYTE]) * nbytes, "little", signed=d.is_signed)
    return raw
