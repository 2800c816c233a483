"""The state of one kernel launch while it is simulated.

An :class:`Execution` holds what the hardware would hold: the SPMD program being run, the
instruction stream position, the engines' accumulator registers, the on-chip tiles with
their live ranges, and the cost counters. Instructions find it through :func:`current`.

Live ranges: a tile is alive from its first access to its last access (instruction
indices), as a compiler's liveness analysis would place it; the SBUF and PSUM capacity rules
are checked over these ranges when a program ends (see :mod:`.capacity`).
"""

from __future__ import annotations

from . import errors
from .running import slot as _tls


class Stats:
    """Instruction counts per engine, DMA traffic and per-engine work of one launch."""

    __slots__ = ("instructions", "dma_bytes", "dma_transfers", "elements", "flops", "by_opcode")

    def __init__(self):
        self.instructions = {}  # engine -> count
        self.dma_bytes = 0
        self.dma_transfers = 0
        self.elements = {}  # engine -> elements processed (per-partition x partitions)
        self.flops = 0.0  # Tensor Engine multiply-adds x 2
        self.by_opcode = {}  # "nc_matmul" -> count

    def as_dict(self) -> dict:
        return {
            "instructions": dict(self.instructions),
            "total_instructions": sum(self.instructions.values()),
            "dma_bytes": self.dma_bytes,
            "dma_transfers": self.dma_transfers,
            "tensor_flops": self.flops,
            "by_opcode": dict(self.by_opcode),
        }


class Execution:
    def __init__(self, kernel_name: str, target, grid: tuple, abstract: bool):
        self.kernel_name = kernel_name
        self.target = target
        self.grid = grid  # () for a plain call
        self.abstract = abstract  # shapes only (fake tensors): no values are computed
        self.compute = not abstract
        self.program_ids: tuple = ()
        self.counter = 0  # index of the next instruction
        self.loc = None  # kernel line of the current instruction
        self.opcode = ""  # the current instruction (named by errors raised deep inside it)
        self.stats = Stats()
        self.tiles = []  # on-chip storages of the current program
        self.shared_hbm = []  # shared_hbm allocations, in program order (SPMD sharing)
        self.shared_cursor = 0
        self.hbm_outputs = []
        self.unfilled = []  # kernel-created HBM storages whose uninitialised pattern is pending
        self.act_regs = None  # ScalarE reduce registers (one fp32 per partition)
        self.vec_regs = None  # VectorE accumulator registers
        self.readonly = ()  # ((start, end, arg name, op name), ...) of the enclosing nki_op
        self.device = None  # torch device for HBM outputs (direct call) or None (on core)
        self.route = -1  # allocation route of the caller (>= 0 inside the eager/compiled path)
        self.rng: object | None = None
        self.prng = {}  # engine -> (128, words) generator state of its lanes (isa/prng.py)
        self.reads = []  # storages the current instruction reads / writes (for the schedule)
        self.writes = []
        self.timeline = None if abstract else _timeline(target.core)
        self.lockstep = None  # nki/lockstep.py's Pair while an LNC pair runs as coroutines
        self.schedule = None  # nki/schedule.py's State under kernel.with_schedule(...)

    def fill_unwritten(self):
        """The kernel has ended: its HBM tensors get the uninitialised pattern wherever it
        wrote nothing (the caller sees what hardware would leave there)."""
        for st in self.unfilled:
            st.materialize()
        self.unfilled = []

    def begin_program(self, ids: tuple, index: int = 0):
        self.program_ids = ids
        if self.timeline is not None:
            self.timeline.program(index)
        self.tiles = []
        self.shared_cursor = 0
        self.act_regs = None
        self.vec_regs = None


def _timeline(core):
    from .cost import Timeline

    return Timeline(core)


def current() -> Execution:
    ex = getattr(_tls, "ex", None)
    if ex is None:
        raise errors.NkiError(
            "nki.language / nki.isa calls run only inside an @nki.jit kernel that is being "
            "executed; call the kernel (kernel(args) or kernel[grid](args)) instead"
        )
    return ex


def current_or_none() -> Execution | None:
    return getattr(_tls, "ex", None)


class activate:
    def __init__(self, ex: Execution):
        self.ex = ex

    def __enter__(self):
        self.prev = getattr(_tls, "ex", None)
        if self.prev is not None:
            raise errors.NkiError(
                f"kernel '{self.ex.kernel_name}' was called from inside kernel "
                f"'{self.prev.kernel_name}': NKI kernels are inlined functions; call the inner "
                f"function without @nki.jit"
            )
        _tls.ex = self.ex
        return self.ex

    def __exit__(self, *exc):
        _tls.ex = self.prev
        return False


def begin(opcode: str) -> Execution:
    """Start one instruction: advance the stream, remember its kernel line, count it (the
    engine is counted by ``isa_common.record`` once the instruction knows it)."""
    ex = getattr(_tls, "ex", None)
    if ex is None:
        current()  # raises the explanatory error
    ex.counter += 1
    ex.opcode = opcode
    ex.loc = errors.here()
    ex.reads = []
    ex.writes = []
    if ex.schedule is not None:  # with_schedule: hold a named instruction after its edges
        from . import schedule

        schedule.note(ex)
    by = ex.stats.by_opcode
    by[opcode] = by.get(opcode, 0) + 1
    return ex
