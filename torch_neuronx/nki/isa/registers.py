"""Engine-sequencer registers and the instructions around them: ``register_alloc`` /
``register_move`` / ``register_load`` / ``register_store`` (registers as simulated 32-bit
scalars, read by ``nl.while_loop`` and ``nl.dynamic_range``), the DMA engines' arithmetic
(``dma_compute``) and the LNC pair's synchronisation (``core_barrier``, ``sendrecv``).

AWS pages (Neuron 2.33):
https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/nki/api/generated/nki.isa.register_alloc.html
https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/nki/api/generated/nki.isa.register_load.html
https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/nki/api/generated/nki.isa.register_store.html
https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/nki/api/generated/nki.isa.dma_compute.html
https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/nki/api/generated/nki.isa.core_barrier.html
https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/nki/api/generated/nki.isa.sendrecv.html
"""

from __future__ import annotations

import math

import torch

from .. import dtypes, execution
from ..errors import NkiUnsupportedError, fail
from ..isa_common import DMA_OK, operand, record_dma, write
from ..storage import MemoryRegion
from .enums import dma_engine, engine

_I32_MIN, _U32_MAX = -(2**31), 2**32 - 1
_PACKED_MX = ("float8_e5m2_x4", "float8_e4m3fn_x4", "float4_e2m1fn_x4")


class VirtualRegister:
    """A 32-bit engine-sequencer register, simulated as a Python int.

    ``value`` is None while the register is uninitialised, and in a shapes-only (fake
    tensor) run for a value loaded from memory: there a loop bounded by it runs its body once
    (every instruction's rules are still checked) and ``bool(reg)`` is False."""

    __slots__ = ("value", "loaded")

    def __init__(self, value=None):
        self.value = value
        self.loaded = False  # set by register_load in a shapes-only run (value unknown)

    def get(self, what: str):
        """The value for ``what`` (a loop bound, a condition); fails when uninitialised."""
        if self.value is None and not self.loaded:
            fail(f"{what}: the register was allocated without a value and never written")
        return self.value

    def __bool__(self):
        v = self.get("a register used as a condition")
        return bool(v) if v is not None else False

    def __int__(self):
        v = self.get("a register used as an integer")
        return 0 if v is None else v

    __index__ = __int__

    def __repr__(self):
        return f"VirtualRegister({self.value!r})"


def _imm(opcode: str, x) -> int:
    if isinstance(x, bool) or not isinstance(x, int):
        fail(f"nisa.{opcode}: the value must be a compile-time integer, got {x!r}")
    if not _I32_MIN <= x <= _U32_MAX:
        fail(f"nisa.{opcode}: {x} does not fit a 32-bit register")
    return x


def _reg(opcode: str, role: str, r) -> VirtualRegister:
    if not isinstance(r, VirtualRegister):
        fail(
            f"nisa.{opcode}: {role} must be a register from nisa.register_alloc(), got "
            f"{type(r).__name__} ({r!r})"
        )
    return r


def _scalar_tensor(ex, opcode: str, role: str, t, write_: bool):
    operand(ex, opcode, role, t, DMA_OK, write=write_)
    if math.prod(t.shape) != 1:
        fail(
            f"nisa.{opcode}: {role} must hold exactly one element (shape [1] or [1, 1]), got {t.shape}"
        )
    name = dtypes.name(t.dtype)
    if name in _PACKED_MX:
        fail(f"nisa.{opcode}: {role} cannot be the packed MX type nl.{name}")
    if dtypes.itemsize(t.dtype) > 4:
        fail(f"nisa.{opcode}: {role} is {name}; a register holds up to 32 bits")


def register_alloc(x=None):
    """A new register, uninitialised (``x=None``), holding the integer ``x``, a copy of the
    register ``x``, or the value of the one-element tensor ``x`` (as register_load)."""
    r = VirtualRegister()
    if x is None:
        return r
    if isinstance(x, VirtualRegister):
        register_move(r, x)
    elif isinstance(x, int) and not isinstance(x, bool):
        register_move(r, x)
    else:
        register_load(r, x)
    return r


def register_move(dst, src=None, imm=None):
    """``dst = src``: a compile-time integer or another register."""
    execution.begin("register_move")
    _reg("register_move", "dst", dst)
    if src is None:
        src = imm
    if isinstance(src, VirtualRegister):
        dst.value, dst.loaded = src.get("nisa.register_move: src"), src.loaded
    else:
        dst.value, dst.loaded = _imm("register_move", src), False


def register_load(dst, src):
    """``dst = src[0]`` from a one-element tensor in HBM or SBUF. A float value is converted
    to an integer (truncated toward zero): registers hold integers (loop bounds, flags)."""
    ex = execution.begin("register_load")
    _reg("register_load", "dst", dst)
    _scalar_tensor(ex, "register_load", "src", src, False)
    record_dma(ex, dtypes.itemsize(src.dtype))
    if not ex.compute:
        dst.value, dst.loaded = None, True
        return
    v = src.read().reshape(-1)[0]
    f = float(v.float())
    if not math.isfinite(f):
        fail(f"nisa.register_load: src holds {f}, which is not an integer a register can hold")
    dst.value, dst.loaded = _imm("register_load", int(f)), False


def register_store(dst, src):
    """``dst[0] = src``: the register's integer value written to a one-element tensor
    (converted to ``dst``'s dtype)."""
    ex = execution.begin("register_store")
    _reg("register_store", "src", src)
    _scalar_tensor(ex, "register_store", "dst", dst, True)
    record_dma(ex, dtypes.itemsize(dst.dtype))
    v = src.get("nisa.register_store: src")
    if ex.compute and v is not None:
        write(dst, torch.tensor([float(v)], dtype=torch.float64).to(dst.read().dtype))


def dma_compute(
    dst,
    srcs,
    reduce_op=None,
    scales=None,
    unique_indices=True,
    oob_mode=None,
    name=None,
):
    """``dst = reduce_op(srcs[0] * scales[0], srcs[1] * scales[1], ...)`` on the DMA engines,
    in float32, cast to ``dst``'s dtype. AWS supports only ``reduce_op=nl.add`` with every
    scale 1.0 (``scales=None``: all 1.0). A source that is ``dst`` itself is read before the
    write (read-modify-write). Also accepts the newer order ``(dst, srcs, scales, reduce_op)``."""
    ex = execution.begin("dma_compute")
    opc = "dma_compute"
    if isinstance(reduce_op, (list, tuple)) and not isinstance(scales, (list, tuple)):
        reduce_op, scales = scales, reduce_op  # dma_compute(dst, srcs, scales, reduce_op)
    if not isinstance(srcs, (list, tuple)) or not srcs:
        fail(f"nisa.{opc}: srcs must be a non-empty list of tensors, got {srcs!r}")
    if getattr(reduce_op, "name", None) != "add":
        fail(
            f"nisa.{opc}: reduce_op must be nl.add (the only reduction AWS supports), got {reduce_op!r}"
        )
    if scales is None:
        scales = [1.0] * len(srcs)
    if not isinstance(scales, (list, tuple)) or len(scales) != len(srcs):
        fail(
            f"nisa.{opc}: scales must be a list with one value per source ({len(srcs)}), got {scales!r}"
        )
    for i, s in enumerate(scales):
        if not isinstance(s, (int, float)) or float(s) != 1.0:
            fail(f"nisa.{opc}: scales[{i}] is {s!r}; AWS supports only scales of 1.0")
    for i, s in enumerate(srcs):
        operand(ex, opc, f"srcs[{i}]", s, DMA_OK)
        if s.size != dst.size:
            fail(
                f"nisa.{opc}: srcs[{i}] has {s.size} elements (shape {s.shape}) but dst has "
                f"{dst.size} (shape {dst.shape}); the element counts must match"
            )
    operand(ex, opc, "dst", dst, DMA_OK, write=True)
    record_dma(ex, sum(s.size * dtypes.itemsize(s.dtype) for s in srcs))
    if ex.compute:
        acc = None
        for s, k in zip(srcs, scales):
            v = s.read().float().reshape(-1) * float(k)
            acc = v if acc is None else acc + v
        write(dst, acc)


def _lnc_rules(ex, opc: str):
    if ex.target.nc_version < 3:
        fail(f"nisa.{opc} needs NeuronCore-v3 or newer (Trn2, Trn3); this is {ex.target.label}")


def core_barrier(data, cores, engine=engine.gpsimd, name=None):
    """A barrier between the two NeuronCores sharing an HBM stack. In a launch whose two
    programs run as coroutines (nki/lockstep.py: any kernel naming sendrecv or core_barrier,
    launched with two programs) each program waits here until its peer has reached its
    barrier as often; otherwise (one program, or more than two) the programs run one after
    another and the barrier is a no-op after its rules are checked."""
    ex = execution.begin("core_barrier")
    _lnc_rules(ex, "core_barrier")
    if tuple(cores) != (0, 1):
        fail(f"nisa.core_barrier: only cores=(0, 1) is supported, got {cores!r}")
    operand(ex, "core_barrier", "data", data, DMA_OK)
    if data.storage.buffer is not MemoryRegion.shared_hbm:
        fail("nisa.core_barrier: data must be a tensor in shared HBM (what both cores write)")
    pair = ex.lockstep
    if pair is not None:
        pair.barrier(pair.turn)


def sendrecv(
    src, dst, send_to_rank, recv_from_rank, pipe_id=None, dma_engine=dma_engine.dma, name=None
):
    """Point-to-point exchange between the two cores of an LNC=2 pair: this core's ``src``
    goes to ``dst`` of core ``send_to_rank`` while ``dst`` receives the ``src`` of core
    ``recv_from_rank`` (a rank equal to the program's own is a loopback copy). The launch's
    two programs run as coroutines (nki/lockstep.py); the value sent is ``src`` at the call,
    and a receive waits for the peer's matching send (same ``pipe_id``), in order."""
    ex = execution.begin("sendrecv")
    _lnc_rules(ex, "sendrecv")
    for role, r in (("send_to_rank", send_to_rank), ("recv_from_rank", recv_from_rank)):
        if r not in (0, 1) or isinstance(r, bool):
            fail(f"nisa.sendrecv: {role} must be 0 or 1 (the two cores of the LNC pair), got {r!r}")
    operand(ex, "sendrecv", "src", src, DMA_OK)
    operand(ex, "sendrecv", "dst", dst, DMA_OK, write=True)
    if src.partitions != dst.partitions or src.free_size != dst.free_size:
        fail(
            f"nisa.sendrecv: src {src.shape} and dst {dst.shape} must have the same partitions "
            f"and elements per partition"
        )
    if dtypes.normalize(src.dtype) != dtypes.normalize(dst.dtype):
        fail(
            f"nisa.sendrecv: src is {dtypes.name(src.dtype)} and dst {dtypes.name(dst.dtype)}; "
            f"they must have the same dtype"
        )
    pair = ex.lockstep
    if pair is None:
        n = 1
        for g in ex.grid or ():
            n *= g
        if ex.abstract and n == 2:
            record_dma(ex, src.size * dtypes.itemsize(src.dtype))
            return  # shapes only (fake tensors): the rules are checked, nothing to exchange
        fail(
            f"nisa.sendrecv needs a launch of exactly two programs, one per core of the LNC "
            f"pair (kernel[2](...)); this launch has {n}",
            NkiUnsupportedError,
        )
    record_dma(ex, src.size * dtypes.itemsize(src.dtype))
    rank = pair.turn
    pipe = pipe_id
    pair.send(pipe, rank, int(send_to_rank), src.read().clone() if ex.compute else None)
    value = pair.receive(pipe, int(recv_from_rank), rank, rank)
    if ex.compute:
        write(dst, value.reshape(dst.shape))
