"""Direct allocation: on-chip tiles the kernel places itself, and the rules on their places.

NKI 2.33: ``nl.ndarray(shape, dtype, buffer, address=(partition_offset, free_offset))``
places a tile at a fixed SBUF/PSUM location (AWS's NKI migration guide, "Improved allocation
API": the free offset is a byte address within each partition; a PSUM tile must start at the
beginning of a 2 KiB bank; https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/migration/index.html).
The pre-0.2 language placed each logical block of a tensor with ``ncc.sbuf.alloc(func)`` /
``mod_alloc`` and the PSUM variants (torch_neuronx/nki/legacy/compiler.py).

A placed tile keeps its own memory in the simulator (no two tiles alias), so what direct
allocation can break on hardware is checked instead: every place must be inside the
partitions and bytes of the buffer (the partition-start rule of the ISA: a tile of more than
64 partitions starts at 0, of 33..64 at 0 or 64, of up to 32 at 0/32/64/96), and two placed
tiles whose places overlap must not be alive at the same time (the second would overwrite
the first on the device): an ``NkiCapacityError`` naming both tiles and their lines.
Placed tiles count in the capacity sweep with the bytes of their distinct places.
"""

from __future__ import annotations

from .errors import NkiCapacityError, fail, format_location
from .storage import MemoryRegion


class Place:
    """One physical tile: partitions [p0, p1), bytes [b0, b1) of each partition (PSUM bytes
    count from bank 0)."""

    __slots__ = ("p0", "p1", "b0", "b1")

    def __init__(self, p0, p1, b0, b1):
        self.p0, self.p1, self.b0, self.b1 = p0, p1, b0, b1

    def overlaps(self, o) -> bool:
        return self.p0 < o.p1 and o.p0 < self.p1 and self.b0 < o.b1 and o.b0 < self.b1

    def __repr__(self):
        return f"partitions [{self.p0}, {self.p1}) bytes [{self.b0}, {self.b1})"


def _partition_rule(what, start, size):
    allowed = (0,) if size > 64 else (0, 64) if size > 32 else (0, 32, 64, 96)
    if start not in allowed:
        fail(
            f"{what}: a tile of {size} partitions must start at partition "
            f"{' or '.join(map(str, allowed))}, got {start} (the ISA's partition-start rule)"
        )


def place(ex, buf, what, start_partition, byte_addr, partitions, nbytes, bank=None) -> Place:
    """Check one physical tile's place and return it."""
    t = ex.target
    for name, v in (("partition offset", start_partition), ("byte address", byte_addr)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            fail(f"{what}: the {name} must be a non-negative integer, got {v!r}")
    _partition_rule(what, start_partition, partitions)
    if start_partition + partitions > t.pmax:
        fail(
            f"{what}: partitions [{start_partition}, {start_partition + partitions}) exceed {t.pmax}"
        )
    if buf is MemoryRegion.psum:
        if bank is not None:
            if isinstance(bank, bool) or not isinstance(bank, int) or not 0 <= bank < t.psum_banks:
                fail(f"{what}: PSUM bank must be 0..{t.psum_banks - 1}, got {bank!r}")
            if start_partition or byte_addr:
                fail(
                    f"{what}: a PSUM tile placed in a bank starts at partition 0, byte 0 of the "
                    f"bank (got partition {start_partition}, byte {byte_addr})"
                )
            if nbytes > t.psum_bank_bytes:
                fail(
                    f"{what}: {nbytes} bytes per partition; a PSUM tile placed in a bank may "
                    f"not span banks ({t.psum_bank_bytes} bytes)"
                )
            byte_addr = bank * t.psum_bank_bytes
        elif byte_addr % t.psum_bank_bytes:
            fail(
                f"{what}: a PSUM tile must start at the beginning of a bank (a multiple of "
                f"{t.psum_bank_bytes} bytes), got byte {byte_addr}"
            )
        limit = t.psum_partition_bytes
    else:
        limit = t.sbuf_partition_bytes
    if byte_addr + nbytes > limit:
        fail(
            f"{what}: bytes [{byte_addr}, {byte_addr + nbytes}) of each partition exceed the "
            f"{limit} bytes of a {buf.value.upper()} partition ({t.label})",
            NkiCapacityError,
        )
    return Place(start_partition, start_partition + partitions, byte_addr, byte_addr + nbytes)


def from_address(ex, buf, shape, nbytes, address) -> list:
    """The place of ``nl.ndarray(..., address=(partition_offset, free_offset))``."""
    if not buf.on_chip:
        fail(f"nl.ndarray(address=...) places SBUF or PSUM tiles; this tensor is in {buf.value}")
    try:
        p, f = address
    except (TypeError, ValueError):
        fail(f"nl.ndarray: address must be (partition_offset, free_offset), got {address!r}")
    return [place(ex, buf, "nl.ndarray(address=...)", p, f, shape[0], nbytes)]


def attach(storage, places: list, block_bytes: int):
    """Record the places on the tile; the capacity sweep counts its distinct places."""
    rec = storage.rec
    rec.places = places
    distinct = {(x.p0, x.b0) for x in places}
    rec.bytes = len(distinct) * block_bytes


def check(ex, recs) -> None:
    """Placed tiles whose places overlap may not be alive at the same time."""
    placed = sorted((r for r in recs if getattr(r, "places", None)), key=lambda r: r.first)
    alive = []
    for r in placed:
        alive = [o for o in alive if o.last >= r.first]
        for o in alive:
            if o.buffer is not r.buffer:
                continue  # SBUF and PSUM addresses are different memories
            hit = next((a for a in r.places for b in o.places if a.overlaps(b)), None)
            if hit is not None:
                fail(
                    f"directly allocated tiles overlap while both are alive: "
                    f"{_name(r)} ({hit}) is first used at {format_location(r.first_loc)}, but "
                    f"{_name(o)}, placed over the same bytes at "
                    f"{format_location(o.alloc_loc)}, is still used at "
                    f"{format_location(o.last_loc)}; on the device the first would be "
                    f"overwritten. Give them disjoint addresses, or end one's use first",
                    NkiCapacityError,
                    loc=r.first_loc,
                )
        alive.append(r)


def _name(r) -> str:
    return f"'{r.name}'" if r.name else "(unnamed tile)"
