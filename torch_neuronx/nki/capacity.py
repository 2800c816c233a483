"""The on-chip memory capacity rules, checked over the tiles' live ranges.

A tile occupies its bytes in every partition from its first access to its last access
(instruction indices of the program). SBUF: the bytes per partition of the tiles alive at
the same time must fit one SBUF partition (224 KiB on NeuronCore-v3). PSUM: each tile takes
whole 2 KiB banks; the banks of the tiles alive at the same time must fit the 8 banks of a
partition. AWS's simulator does not check either ("does not validate against SBUF/PSUM
capacity limits"); a real compiler reports such kernels as allocation failures.
"""

from __future__ import annotations

from . import placement
from .errors import NkiCapacityError, fail, format_location
from .storage import MemoryRegion


def _kib(n: int) -> str:
    return f"{n / 1024:.1f} KiB"


def check(ex) -> None:
    t = ex.target
    recs = [r for r in ex.tiles if r.first >= 0]
    placement.check(ex, recs)  # directly allocated tiles: no two alive over the same bytes
    _sweep(
        ex,
        [r for r in recs if r.buffer is MemoryRegion.sbuf],
        lambda r: r.bytes,
        t.sbuf_partition_bytes,
        "SBUF",
        lambda total: (
            f"{_kib(total)} per partition > {_kib(t.sbuf_partition_bytes)} "
            f"({t.label} SBUF: 128 partitions x {_kib(t.sbuf_partition_bytes)})"
        ),
        lambda r: _kib(r.bytes) + "/partition",
    )
    _sweep(
        ex,
        [r for r in recs if r.buffer is MemoryRegion.psum],
        lambda r: r.banks,
        t.psum_banks,
        "PSUM",
        lambda total: (
            f"{total} PSUM banks > {t.psum_banks} ({t.label} PSUM: "
            f"{t.psum_banks} banks x {t.psum_bank_bytes} bytes per partition)"
        ),
        lambda r: f"{r.banks} bank(s), {r.bytes} bytes/partition",
    )


def _sweep(ex, recs, amount, capacity, what, why, size_text):
    if sum(amount(r) for r in recs) <= capacity:
        return  # every tile alive at once would still fit (no sweep needed)
    events = []
    for r in recs:
        events.append((r.first, 1, id(r), r))
        events.append((r.last + 1, 0, id(r), r))  # removals sort before additions at a tie
    events.sort(key=lambda e: (e[0], e[1]))
    alive = {}
    total = 0
    for _, kind, key, r in events:
        if kind == 0:
            if key in alive:
                del alive[key]
                total -= amount(r)
            continue
        alive[key] = r
        total += amount(r)
        if total > capacity:
            lines = [
                f"{what} capacity exceeded: tiles alive at the same time need {why(total)}.",
                f"  exceeded when tile {_name(r)} ({size_text(r)}) became live; alive then:",
            ]
            for other in sorted(alive.values(), key=lambda o: -amount(o)):
                lines.append(
                    f"    - {_name(other)}: {size_text(other)}, allocated at "
                    f"{format_location(other.alloc_loc)}; last used at "
                    f"{format_location(other.last_loc)}"
                )
            lines.append(
                "  Free tiles earlier (narrower scopes), use smaller tiles, or reuse buffers."
            )
            fail("\n".join(lines), NkiCapacityError, loc=r.first_loc)


def _name(r) -> str:
    return f"'{r.name}'" if r.name else "(unnamed)"
