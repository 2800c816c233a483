"""A compiled kernel is checked before it is loaded, so that a damaged one is rebuilt instead
of crashing the process.

``dlopen`` maps a shared object's segments as its headers describe them; a truncated file
(a full disk, a killed compile, a copy cut short) maps pages past its end, and the first touch
of one kills the process with SIGBUS -- on every rerun, since the file stays in the cache.
So Inductor's loader (``CppCodeCache._load_library``, every kernel and ISA probe of the
process) is wrapped (runtime/patches.py lists it): the ELF header is checked against this
host (64-bit, byte order, machine, a shared object) and every program header, segment and
the section table against the file's size; a file that fails, or that ``dlopen`` rejects,
raises :class:`KernelLoadError` naming the file. The persistent cache (cache.py) then deletes
the files named in the error, reports it (one warning) and builds the graph again.
"""

from __future__ import annotations

import inspect
import os
import platform
import struct
import sys
import threading

from torch_neuronx.runtime import patches

__all__ = ["KernelLoadError", "problem", "install"]

#: ELF e_machine of the hosts Inductor's CPU code generation targets
_MACHINES = {"x86_64": 62, "amd64": 62, "aarch64": 183, "arm64": 183, "ppc64le": 21}
_ET_DYN = 3
_PT_LOAD = 1

_lock = threading.Lock()
_installed = False

_REASON = (
    "a truncated or foreign kernel .so crashes the process with SIGBUS inside dlopen; the "
    "loader checks the ELF headers against the file first and raises KernelLoadError (naming "
    "the file) so the neuron compile cache deletes and rebuilds it (compile/kernel_check.py)"
)


class KernelLoadError(OSError):
    """A compiled kernel could not be loaded: truncated, corrupt, or built for another
    machine. The message names the file."""


def problem(path: str) -> str | None:
    """Why the shared object at ``path`` cannot be loaded on this host, or None."""
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(64)
            if len(head) < 64 or head[:4] != b"\x7fELF":
                return f"not an ELF file ({size} bytes)"
            if head[4] != 2 or sys.maxsize <= 2**32:
                return "not a 64-bit ELF object"
            order = "<" if head[5] == 1 else ">" if head[5] == 2 else None
            if order is None or (order == "<") != (sys.byteorder == "little"):
                return "built for another byte order"
            e_type, e_machine = struct.unpack_from(order + "HH", head, 16)
            want = _MACHINES.get(platform.machine().lower())
            if want is not None and e_machine != want:
                return f"built for another machine (ELF machine {e_machine}, this host {want})"
            if e_type != _ET_DYN:
                return f"not a shared object (ELF type {e_type})"
            phoff, shoff = struct.unpack_from(order + "QQ", head, 32)
            phentsize, phnum, shentsize, shnum = struct.unpack_from(order + "HHHH", head, 54)
            if phnum == 0 or phentsize < 56 or phoff + phnum * phentsize > size:
                return f"program headers beyond the end of the file ({size} bytes): truncated"
            if shnum and shoff + shnum * shentsize > size:
                return f"section table beyond the end of the file ({size} bytes): truncated"
            f.seek(phoff)
            table = f.read(phnum * phentsize)
        for i in range(phnum):
            p_type, _, p_offset = struct.unpack_from(order + "IIQ", table, i * phentsize)
            (p_filesz,) = struct.unpack_from(order + "Q", table, i * phentsize + 32)
            if p_type == _PT_LOAD and p_offset + p_filesz > size:
                return f"a segment ends past the end of the file ({size} bytes): truncated"
    except OSError as exc:
        return f"unreadable ({type(exc).__name__}: {exc})"
    return None


def install() -> None:
    """Wrap Inductor's library loader (once per process)."""
    global _installed
    with _lock:
        if _installed:
            return
        from torch._inductor.codecache import CppCodeCache

        load = inspect.getattr_static(CppCodeCache, "_load_library").__func__

        def _load_library(cls, path: str, key: str):
            why = problem(path)
            if why is not None:
                raise KernelLoadError(f"compiled kernel {path} cannot be loaded: {why}")
            try:
                return load(cls, path, key)
            except (ImportError, OSError) as exc:
                if isinstance(exc, KernelLoadError):
                    raise
                raise KernelLoadError(
                    f"compiled kernel {path} cannot be loaded: {type(exc).__name__}: {exc}"
                ) from exc

        patches.replace(CppCodeCache, "_load_library", classmethod(_load_library), reason=_REASON)
        _installed = True
