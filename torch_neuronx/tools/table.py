"""Tables on the console for the `torch-neuronx` commands (rich when installed, else text)."""

from __future__ import annotations


def _console():
    try:
        from rich.console import Console

        return Console()
    except ImportError:  # rich is optional: plain text then
        return None


def print_table(title: str, headers: list[str], rows: list[list[str]]) -> None:
    con = _console()
    if con is not None:
        from rich.table import Table

        t = Table(title=title)
        for h in headers:
            t.add_column(h)
        for r in rows:
            t.add_row(*[str(c) for c in r])
        con.print(t)
        return
    print(title)
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows, strict=True)]
    for r in [headers, *rows]:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)))
