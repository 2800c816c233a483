"""What every simulated ISA instruction does before and around its math: operand checks
(kind, buffer, partitions, sizes, dtypes), live-range and PSUM-state bookkeeping, write
permission, and the cost record. The math itself is one torch op per instruction."""

from __future__ import annotations

import math

import torch

from . import dtypes
from .alloc import touch
from .dynamic import SCALAR, TENSOR_INDIRECT, VECTOR, DynamicTensor
from .errors import NkiMutationError, NkiUnsupportedError, fail
from .indexed import IndexedTensor
from .storage import MemoryRegion
from .tensor import NkiTensor

SBUF, PSUM = MemoryRegion.sbuf, MemoryRegion.psum
HBM = (MemoryRegion.private_hbm, MemoryRegion.shared_hbm)
ON_CHIP = (SBUF, PSUM)
SBUF_ONLY = (SBUF,)
PSUM_ONLY = (PSUM,)
DMA_OK = (SBUF,) + HBM

#: where a dynamic view may be an operand: DMA addressing (scalar: a register/SBUF start;
#: vector: indirect DMA, AWS's software DGE) on the DMA instructions; a scalar start also on the
#: element-wise engine instructions (access patterns with a register start); tensor
#: indirection on the operands AWS's 2.33 pages list (instruction -> roles)
_DYNAMIC_OK = {
    SCALAR: frozenset(
        {
            "dma_copy",
            "dma_transpose",
            "tensor_copy",
            "tensor_tensor",
            "tensor_scalar",
            "activation",
            "memset",
            "tensor_copy_predicated",
        }
    ),
    VECTOR: frozenset({"dma_copy", "dma_transpose"}),
}
_TI_ROLES = {
    "tensor_copy": ("src", "dst"),
    "tensor_tensor": ("dst", "data1"),
    "tensor_copy_predicated": ("dst", "predicate"),
    "nc_matmul": ("stationary", "moving"),
}
#: AWS lists tensor indirection on these too; not simulated here (the error says so):
#: nc_matmul's dst (a scatter into an accumulating PSUM tile) and nc_matmul_mx
_TI_NOT_SIMULATED = {"nc_matmul": ("dst",), "nc_matmul_mx": ("dst", "stationary", "moving")}

#: the instructions that take the packed MX types (others would read their bits as numbers)
MX_OPCODES = frozenset({"dma_copy", "tensor_copy", "quantize_mx", "nc_matmul_mx"})

_BUF_NAMES = {
    SBUF: "SBUF",
    PSUM: "PSUM",
    MemoryRegion.private_hbm: "HBM",
    MemoryRegion.shared_hbm: "shared HBM",
}


def _where(allowed) -> str:
    names = []
    for b in allowed:
        n = _BUF_NAMES[b]
        if n not in names:
            names.append(n)
    return " or ".join(names)


def operand(ex, opcode: str, role: str, x, allowed, write: bool = False, psum_state: bool = True):
    if not isinstance(x, (NkiTensor, IndexedTensor, DynamicTensor)):
        fail(f"nisa.{opcode}: {role} must be an NKI tensor, got {type(x).__name__} ({x!r})")
    if x.__class__ is DynamicTensor:
        _dynamic_operand(ex, opcode, role, x)
    st = x.storage
    buf = st.buffer
    if type(x.dtype) is dtypes.NkiOnlyDType and x.dtype.packed and opcode not in MX_OPCODES:
        fail(
            f"nisa.{opcode}: {role} is the packed MX type nl.{x.dtype.name} (four values per "
            f"element); only dma_copy, tensor_copy (to the same type), quantize_mx and "
            f"nc_matmul_mx take it: dequantize with nc_matmul_mx, or view the bits as an integer "
            f"type (t.view(nl.int32 / nl.int16))"
        )
    if buf not in allowed:
        fail(f"nisa.{opcode}: {role} must be in {_where(allowed)}, but it is in {_BUF_NAMES[buf]}")
    if st.rec is not None:
        touch(ex, st)
    (ex.writes if write else ex.reads).append(st)
    if write:
        if st.readonly is not None:
            fail(
                f"nisa.{opcode} writes to {st.readonly}, which is not declared mutable: add it "
                f"to mutates_args of the nki_op (or write the result to a new output tensor)",
                NkiMutationError,
            )
        if buf is PSUM and psum_state:  # a non-matmul write ends accumulation, value-initialises
            st.mm_live.clear()
            st.mm_ever.clear()
            st.value_init = True
    elif buf is PSUM and psum_state:
        st.mm_live.clear()  # evicting PSUM closes its accumulation groups (auto mode)
    return x


def _dynamic_operand(ex, opcode: str, role: str, x):
    """The rules of a dynamic/indirect operand; its index tiles are read by the instruction."""
    if x.kind == TENSOR_INDIRECT:
        if role in _TI_NOT_SIMULATED.get(opcode, ()):
            fail(
                f"nisa.{opcode}: tensor indirection on {role} ({x.what}) is not simulated; "
                f"gather or scatter the columns with nisa.tensor_copy and t.indirect(...) instead",
                NkiUnsupportedError,
            )
        if role not in _TI_ROLES.get(opcode, ()):
            fail(
                f"nisa.{opcode}: {role} cannot be a tensor-indirection view ({x.what}); AWS "
                f"allows it on tensor_copy (src, dst), tensor_tensor (dst, data1), "
                f"tensor_copy_predicated (dst, predicate) and nc_matmul (stationary, moving; "
                f"dst is not simulated)"
            )
        if ex.target.nc_version < 4:
            fail(
                f"nisa.{opcode}: tensor indirection ({x.what}) needs NeuronCore-v4 (Trn3); the "
                f"emulated core is NeuronCore-v{ex.target.nc_version} "
                f"(TORCH_NEURONX_EMULATED_INSTANCE=trn3.3xlarge)"
            )
    elif opcode not in _DYNAMIC_OK[x.kind]:
        kind = "an indirect (vector_offset) DMA view" if x.kind == VECTOR else "a dynamic view"
        fail(
            f"nisa.{opcode}: {role} is {kind} ({x.what}); it is an operand of "
            f"{', '.join(sorted(_DYNAMIC_OK[x.kind]))} only"
        )
    for t in x.index_tiles():
        st = t.storage
        if st.rec is not None:
            touch(ex, st)
        ex.reads.append(st)


def scalar_or_vector(
    ex, opcode: str, role: str, v, data, fp32_only: bool = False, allow_none: bool = False
):
    """A compile-time scalar, or an on-chip ``(P, 1)`` vector broadcast along the free dims:
    returns a float or a tensor broadcastable to ``data.shape`` (None when compute is off)."""
    if v is None:
        if allow_none:
            return None
        fail(f"nisa.{opcode}: {role} is required")
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    if isinstance(v, bool):
        return float(v)
    operand(ex, opcode, role, v, ON_CHIP)
    if v.partitions != data.partitions or v.free_size != 1:
        fail(
            f"nisa.{opcode}: {role} must be a scalar or a tile of shape ({data.partitions}, 1) "
            f"(one value per partition), got shape {v.shape}"
        )
    if fp32_only and v.dtype is not torch.float32:
        fail(
            f"nisa.{opcode}: {role} must be float32 (the engine reads scalar operands as fp32), "
            f"got {dtypes.name(v.dtype)}"
        )
    if not ex.compute:
        return None
    t = v.read().float().reshape((data.partitions,) + (1,) * (len(data.shape) - 1))
    return t


def same_partitions(opcode, a_role, a, b_role, b):
    if a.partitions != b.partitions:
        fail(
            f"nisa.{opcode}: {a_role} has {a.partitions} partitions but {b_role} has "
            f"{b.partitions}; they must match"
        )


def same_free(opcode, a_role, a, b_role, b):
    if a.free_size != b.free_size:
        fail(
            f"nisa.{opcode}: {a_role} has {a.free_size} elements per partition (shape {a.shape}) "
            f"but {b_role} has {b.free_size} (shape {b.shape}); they must match"
        )


def unary_operands(ex, opcode: str, dst, src, role: str = "data", allowed=ON_CHIP):
    """The operand checks of an instruction that writes ``dst`` element by element from one
    tile ``src`` (read first): both in ``allowed`` buffers, the same partitions and free size."""
    operand(ex, opcode, role, src, allowed)
    operand(ex, opcode, "dst", dst, allowed, write=True)
    same_partitions(opcode, "dst", dst, role, src)
    same_free(opcode, "dst", dst, role, src)


def require_int(opcode, op, **tiles):
    for role, t in tiles.items():
        if t is not None and not dtypes.is_int(t.dtype):
            fail(
                f"nisa.{opcode}: bitvec operator nl.{op.name} needs integer tiles; {role} is "
                f"{dtypes.name(t.dtype)}"
            )


def f32(x, mask=None) -> torch.Tensor:
    v = x.read(mask)
    return v if v.dtype is torch.float32 else v.float()


def write(dst, value: torch.Tensor, mask=None):
    if value.shape != dst.shape:
        value = value.reshape(dst.shape)
    dst.write(value, mask)


#: torch functions that take ``out=``: an instruction's result goes straight into its dst
#: (a temporary the size of a tile would cost a fresh allocation, i.e. page faults, per call)
_OUT_OK = frozenset(
    {torch.add, torch.sub, torch.mul, torch.div, torch.maximum, torch.minimum, torch.pow}
)


def write_into(dst, fn, *args) -> bool:
    """``dst = fn(*args)`` computed in place into ``dst``'s memory when ``fn`` takes ``out=``
    and ``dst`` overlaps no input other than as the very same view; False when not done
    (then the caller writes ``fn``'s result as usual)."""
    if fn not in _OUT_OK or dst.__class__ is not NkiTensor:
        return False
    st = dst.storage
    reads_dst = False
    for a in args:
        if a.__class__ is NkiTensor and a.storage is st:
            same = (a.offset, a.shape, a.strides, a.dtype) == (
                dst.offset,
                dst.shape,
                dst.strides,
                dst.dtype,
            )
            if not same:
                return False
            reads_dst = True
    # dst read too (``x = x + y``): its unwritten elements must read as the pattern
    out = dst.tensor if reads_dst else dst.overwrite_view()
    shape = out.shape
    vals = []
    for a in args:
        if a.__class__ is NkiTensor:
            a = a.tensor
            if a.shape != shape:
                a = a.reshape(shape)
        vals.append(a)
    fn(*vals, out=out)
    return True


def record(ex, engine: str, x, inputs: int = 1, seconds=None):
    """Count the instruction on ``engine`` and place it on the modeled schedule (an
    element-wise instruction over ``x``'s elements per partition unless ``seconds`` given)."""
    st = ex.stats
    st.instructions[engine] = st.instructions.get(engine, 0) + 1
    el = st.elements
    el[engine] = el.get(engine, 0) + x.shape[0] * x.free_size
    tl = ex.timeline
    if tl is not None:
        if seconds is None:
            seconds = tl.element_seconds(engine, x.free_size, inputs, 8 * dtypes.itemsize(x.dtype))
        tl.issue(engine, seconds, ex.reads, ex.writes)


def record_dma(ex, nbytes: int, dge=None, rows: int = 0):
    """Count one DMA transfer of ``nbytes`` and place it on the modeled schedule. ``dge``:
    descriptors generated on the device for a dynamic address ("hwdge": the DGE block's fixed
    time before the transfer; "swdge": a GpSimd pass over ``rows`` offsets the transfer waits
    for; see nki/cost.py)."""
    st = ex.stats
    st.instructions["dma"] = st.instructions.get("dma", 0) + 1
    st.dma_bytes += nbytes
    st.dma_transfers += 1
    tl = ex.timeline
    if tl is not None:
        after, extra = 0.0, 0.0
        if dge == "swdge":
            after = tl.issue("gpsimd", tl.swdge_seconds(rows), ex.reads, ())
        elif dge == "hwdge":
            extra = tl.hwdge_seconds
        tl.issue("dma", nbytes / tl.dma_bw, ex.reads, ex.writes, dma=True, after=after, extra=extra)


def numel(x) -> int:
    return math.prod(x.shape)
