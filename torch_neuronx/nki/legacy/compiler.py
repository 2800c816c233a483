"""``neuronxcc.nki.compiler`` (``ncc``, NKI before 0.2): direct allocation and kernel decorators.

AWS's reference (Neuron 2.26 and earlier,
https://awsdocs-neuron.readthedocs-hosted.com/en/v2.26.1/nki/api/nki.compiler.html) lists
``sbuf.alloc``, ``sbuf.mod_alloc``, ``sbuf.auto_alloc``, the three ``psum`` ones, and the
decorators ``skip_middle_end_transformations``, ``enable_stack_allocator``,
``force_auto_alloc``. Here:

- ``buffer=ncc.sbuf.alloc(func)`` / ``mod_alloc(...)`` (and the PSUM ones) place each logical
  block of a tensor where ``func(block index, partitions, bytes per partition)`` says (SBUF:
  ``(start_partition, byte_addr)``; PSUM: ``(bank, start_partition, byte_addr)``); the places
  are checked and two live tiles over the same bytes are an error (nki/placement.py). The
  blocks of one tensor share its one live range, so two blocks of a tensor over the same
  place (modulo allocation's point) are not checked against each other;
- ``ncc.sbuf`` / ``ncc.psum`` / ``auto_alloc()`` are the plain buffers (``nl.sbuf``/``nl.psum``);
- ``skip_middle_end_transformations`` is accepted: the simulator has no middle end, kernels
  run as written either way; ``enable_stack_allocator`` checks it is stacked on
  ``skip_middle_end_transformations`` as AWS requires (placement is automatic here);
  ``force_auto_alloc`` makes the kernel ignore its direct allocations, as documented.
"""

from __future__ import annotations

import contextlib
import itertools

from .. import running
from ..errors import NkiValidationError, fail
from ..kernel import Kernel
from ..storage import MemoryRegion


class DirectAlloc:
    """The ``buffer=`` of a directly allocated tensor: where each logical block goes."""

    def __init__(self, region: MemoryRegion, func, api: str):
        if not callable(func):
            raise NkiValidationError(f"ncc.{api}: func must be a callable, got {func!r}")
        self.region = region
        self.func = func
        self.api = api

    @property
    def value(self):
        return self.region.value

    def places(self, ex, blocks: tuple, partitions: int, block_bytes: int) -> list:
        from .. import placement

        out = []
        for idx in itertools.product(*[range(b) for b in blocks]):
            r = self.func(idx, partitions, block_bytes)
            what = f"ncc.{self.api} (block {idx})"
            want = 3 if self.region is MemoryRegion.psum else 2
            if not isinstance(r, (tuple, list)) or len(r) != want:
                fail(
                    f"{what}: the allocation function must return "
                    + (
                        "(bank, start_partition, byte_addr)"
                        if want == 3
                        else "(start_partition, byte_addr)"
                    )
                    + f", got {r!r}"
                )
            if want == 3:
                out.append(
                    placement.place(
                        ex, self.region, what, r[1], r[2], partitions, block_bytes, bank=r[0]
                    )
                )
            else:
                out.append(
                    placement.place(ex, self.region, what, r[0], r[1], partitions, block_bytes)
                )
        return out


def _linear(shape, idx):
    n, out = 1, 0
    for s, i in reversed(list(zip(shape, idx, strict=False))):
        out += i * n
        n *= s
    return out


def _modulo(base, tiles, scale, api, name):
    """AWS's ``modulo_allocate_func``: ``base + linear(idx % tiles) * scale`` (tiles () is all 1)."""

    def f(idx):
        if not idx:
            # a tensor without block dims is one block, at base; AWS's attention tutorial
            # (attn_fwd_v9) reserves num_free_tiles=(n,) buffers for such (P, n, F) tensors
            return base
        shape = tuple(tiles) or (1,) * len(idx)
        if len(shape) != len(idx) and all(int(s) == 1 for s in shape):
            # one tile per axis places every block at base, as () does; AWS's attention
            # tutorial (attn_fwd_v9) passes num_free_tiles=(1,) for tensors without block dims
            shape = (1,) * len(idx)
        if len(shape) != len(idx):
            fail(
                f"ncc.{api}: {name} has {len(shape)} entries but the tensor has {len(idx)} block "
                f"dims; give one per block dim, or ()"
            )
        return base + _linear(shape, tuple(i % s for i, s in zip(idx, shape, strict=False))) * scale

    return f


class _Buffer:
    """``ncc.sbuf`` / ``ncc.psum``: the buffer itself (automatic allocation) and its direct
    allocation functions."""

    def __init__(self, region: MemoryRegion):
        self.region = region

    @property
    def value(self):
        return self.region.value

    def auto_alloc(self):
        """The compiler places the tensor (the same as ``nl.sbuf`` / ``nl.psum``)."""
        return self.region

    def alloc(self, func):
        """Place each logical block where ``func(idx, pdim_size, fdim_size)`` says."""
        return DirectAlloc(self.region, func, f"{self.region.value}.alloc")

    def mod_alloc(
        self,
        *,
        base_addr=0,
        base_partition=0,
        num_par_tiles=(),
        num_free_tiles=(),
        base_bank=None,
        num_bank_tiles=(),
    ):
        """Modulo allocation: block ``idx`` at ``base + linear(idx % num_tiles) * tile size``
        on each axis (partitions, bytes; PSUM also banks)."""
        api = f"{self.region.value}.mod_alloc"
        if base_partition != 0:
            raise NkiValidationError(f"ncc.{api}: base_partition must be 0 (AWS's current rule)")
        psum = self.region is MemoryRegion.psum
        if psum and base_bank is None:
            raise NkiValidationError("ncc.psum.mod_alloc: base_bank is required")
        if not psum and base_bank is not None:
            raise NkiValidationError("ncc.sbuf.mod_alloc takes no base_bank (a PSUM argument)")

        def func(idx, pdim_size, fdim_size):
            part = _modulo(base_partition, num_par_tiles, pdim_size, api, "num_par_tiles")(idx)
            addr = _modulo(base_addr, num_free_tiles, fdim_size, api, "num_free_tiles")(idx)
            if psum:
                return (
                    _modulo(base_bank, num_bank_tiles, 1, api, "num_bank_tiles")(idx),
                    part,
                    addr,
                )
            return (part, addr)

        return DirectAlloc(self.region, func, api)

    def __repr__(self):
        return f"ncc.{self.region.value}"


sbuf = _Buffer(MemoryRegion.sbuf)
psum = _Buffer(MemoryRegion.psum)


def region_of(buffer):
    """(MemoryRegion or the buffer unchanged, DirectAlloc or None) for a legacy ``buffer=``;
    under ``force_auto_alloc`` a direct allocation is only its buffer."""
    if isinstance(buffer, _Buffer):
        return buffer.region, None
    if isinstance(buffer, DirectAlloc):
        if getattr(running.slot, "force_auto_alloc", False):
            return buffer.region, None
        return buffer.region, buffer
    return buffer, None


class _Decorated:
    """A kernel under the compiler decorators: a launch runs the kernel with their flags."""

    def __init__(self, kernel, flags: dict, grid=None):
        if isinstance(kernel, _Decorated):
            flags = {**kernel.flags, **flags}
            kernel = kernel.kernel
        elif isinstance(getattr(kernel, "kernel", None), Kernel):
            pass  # a launch decorator (nki.baremetal/benchmark/profile): launched as it is
        elif not isinstance(kernel, Kernel):
            if not callable(kernel):
                raise NkiValidationError(f"expected an NKI kernel, got {type(kernel).__name__}")
            kernel = Kernel(kernel)
        self.kernel = kernel
        self.flags = flags
        self.grid = grid
        self.__name__ = getattr(kernel, "__name__", None) or kernel.kernel.__name__

    @property
    def last_report(self):
        inner = self.kernel if isinstance(self.kernel, Kernel) else self.kernel.kernel
        return inner.last_report

    def __getitem__(self, grid):
        return _Decorated(self.kernel, self.flags, grid)

    def __call__(self, *args, **kwargs):
        before = getattr(running.slot, "force_auto_alloc", False)
        running.slot.force_auto_alloc = self.flags.get("force_auto_alloc", False)
        try:
            launch = self.kernel[self.grid] if self.grid is not None else self.kernel
            return launch(*args, **kwargs)
        finally:
            running.slot.force_auto_alloc = before


def _decorator(func, flag, **extra):
    def apply(k):
        if flag == "enable_stack_allocator" and not (
            isinstance(k, _Decorated) and k.flags.get("skip_middle_end_transformations")
        ):
            raise NkiValidationError(
                "ncc.enable_stack_allocator must be used together with "
                "skip_middle_end_transformations: stack them as\n"
                "  @ncc.enable_stack_allocator\n  @ncc.skip_middle_end_transformations\n"
                "  @nki.jit\n  def kernel(...)"
            )
        return _Decorated(k, {flag: True, **extra})

    return apply if func is None else apply(func)


def skip_middle_end_transformations(func=None):
    """Accepted: the simulator has no middle end (the kernel runs as written either way)."""
    return _decorator(func, "skip_middle_end_transformations")


def enable_stack_allocator(func=None, log_level=50):
    """Accepted on a kernel decorated with ``skip_middle_end_transformations`` (AWS's rule);
    tiles are placed automatically here, their capacity checked over their live ranges."""
    return _decorator(func, "enable_stack_allocator", log_level=log_level)


def force_auto_alloc(func=None):
    """The kernel's direct allocations (``ncc.sbuf.alloc`` ...) are ignored: automatic
    placement."""
    return _decorator(func, "force_auto_alloc")


@contextlib.contextmanager
def no_reorder():
    """``with ncc.no_reorder():`` / ``directives=ncc.no_reorder()``: keep program order. The
    simulator runs every instruction in program order, so this changes nothing."""
    yield
