"""How the report's figures read, the same in the terminal, the HTML and the verdict: sizes and
times in the unit that fits the figure (a 0.7 MiB run is not "0.000 GiB"), paths relative to
the working directory, messages cut to what a reader needs (a compiler's 50-line IR dump is in
report.json, not on the screen)."""

from __future__ import annotations

import math
import os

_SIZES = (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10))


def size(n) -> str:
    """Bytes in the largest binary unit the figure reaches: '1.2 GiB', '734.0 KiB', '12 B'."""
    if n is None:
        return "n/a"
    for unit, scale in _SIZES:
        if abs(n) >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{int(n)} B"


def seconds(s) -> str:
    """A time in the unit that fits it: '3.17 s', '3.04 ms', '12.5 us'."""
    if s is None:
        return "n/a"
    if s == 0:
        return "0 s"
    if abs(s) >= 1:
        return f"{s:,.3g} s" if abs(s) < 1000 else f"{s:,.0f} s"
    if abs(s) >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} us"


def seconds_range(pair) -> str:
    """'3.04-3.34 ms' (the unit of the upper end; one figure when both read the same)."""
    lo, hi = pair
    unit_scale = 1.0 if abs(hi) >= 1 else 1e3 if abs(hi) >= 1e-3 else 1e6
    unit = "s" if unit_scale == 1.0 else "ms" if unit_scale == 1e3 else "us"
    a, b = f"{lo * unit_scale:,.3g}", f"{hi * unit_scale:,.3g}"
    return f"{a} {unit}" if a == b else f"{a}-{b} {unit}"


def usd(x) -> str:
    """Dollars with 3-4 significant digits, never in e-notation: '$0.0000679', '$7.87'."""
    if x is None:
        return "n/a"
    if x == 0 or abs(x) >= 1000:
        return f"${x:,.0f}"
    if abs(x) >= 1:
        return f"${x:,.2f}"
    digits = -math.floor(math.log10(abs(x))) + 2
    return f"${x:.{digits}f}"


def usd_range(pair) -> str:
    a, b = usd(pair[0]), usd(pair[1])
    return a if a == b else f"{a}-{b}"


def rel(text, cwd: str | None = None) -> str:
    """``text`` with absolute paths under the working directory made relative to it."""
    if text is None:
        return ""
    text = str(text)
    cwd = (cwd or os.getcwd()).rstrip(os.sep)
    if cwd and cwd != os.sep:
        text = text.replace(cwd + os.sep, "")
    return text


def first_lines(text, lines: int = 3, chars: int = 300) -> str:
    """The start of a message: at most ``lines`` lines and ``chars`` characters, and how much
    was left out."""
    text = str(text or "")
    kept = text.splitlines()[:lines]
    out = "\n".join(kept)[:chars]
    rest = len(text) - len(out)
    return out + (f" [... {rest:,} more characters in report.json]" if rest > 0 else "")


def yes_no(flag) -> str:
    return "n/a" if flag is None else ("yes" if flag else "no")


def size_unit(n) -> tuple:
    """(unit, bytes per unit) that :func:`size` would use for ``n`` (a plot's axis)."""
    return next(((u, k) for u, k in _SIZES if abs(n or 0) >= k), ("B", 1))
