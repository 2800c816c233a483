"""Errors of the NKI simulator, each naming the kernel's source line and the rule broken.

``NkiValidationError`` is AWS's name (``nki.isa.NkiValidationError``) for a hardware
constraint violation. The location is the innermost frame outside this package: the
kernel line (or helper function line) that issued the instruction or allocation.
"""

from __future__ import annotations

import linecache
import os
import sys

from . import running

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))


class NkiError(RuntimeError):
    """Base class of every error raised while simulating an NKI kernel."""


class NkiValidationError(NkiError, ValueError):
    """A kernel broke a rule of the NeuronCore (shape, buffer, dtype, bounds)."""


class NkiCapacityError(NkiValidationError):
    """Tiles alive at the same time exceed SBUF or PSUM capacity per partition."""


class NkiMutationError(NkiValidationError):
    """A kernel wrote to an HBM input that its ``nki_op`` did not declare mutable."""


class NkiUnsupportedError(NkiError, NotImplementedError):
    """A documented NKI API that this simulator does not implement."""


def _in_package(filename: str) -> bool:
    return os.path.abspath(filename).startswith(_PKG_DIR + os.sep)


#: id(code object) -> (the code object, whether it belongs to torch_neuronx.nki), asked for
#: every instruction and allocation. Keyed by id (a code object hashes its contents); the
#: entry holds the code object, so the id cannot be reused while the entry exists.
_IN_NKI: dict = {}


def user_frame(depth: int = 1):
    """The innermost frame outside torch_neuronx.nki (the kernel's line), or None."""
    f = sys._getframe(depth)
    known = _IN_NKI
    while f is not None:
        code = f.f_code
        entry = known.get(id(code))
        if entry is None:
            if len(known) > 4096:  # kernels made on the fly (tests): keep the memo small
                known.clear()
            name = f.f_globals.get("__name__", "")
            entry = known[id(code)] = (code, name.startswith("torch_neuronx.nki"))
        if not entry[1]:
            return f
        f = f.f_back
    return None


def here():
    """(filename, lineno, function) of the kernel line being executed."""
    f = user_frame(2)
    if f is None:
        return None
    return (f.f_code.co_filename, f.f_lineno, f.f_code.co_name)


def format_location(loc) -> str:
    if not loc:
        return "<unknown kernel line>"
    filename, lineno, func = loc
    text = linecache.getline(filename, lineno).strip()
    rel = os.path.relpath(filename)
    short = filename if rel.startswith("..") else rel
    return f"{short}:{lineno} in {func}: {text}" if text else f"{short}:{lineno} in {func}"


def fail(message: str, cls=NkiValidationError, loc=None):
    """Raise ``cls`` with the kernel context and the kernel line that caused it."""
    ex = getattr(running.slot, "ex", None)
    if loc is None:
        loc = here()
    where = format_location(loc)
    prefix = ""
    if ex is not None:
        prefix = f"NKI kernel '{ex.kernel_name}'"
        if ex.grid:
            prefix += f" (program {ex.program_ids})"
        prefix += ": "
    raise cls(f"{prefix}{message}\n  at {where}")
