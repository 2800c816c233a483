"""Every directory Inductor reads code from during a neuron compile: private and checked.

Inductor compiles C++ and loads (or ``-include``s) what it finds in its directories. Left to
itself it uses ``<tempdir>/torchinductor_<user>`` -- a directory whoever creates it first owns
-- for its code cache, for the vector-ISA probe programs it builds and dlopens, and, whatever
``TORCHINDUCTOR_CACHE_DIR`` says, for its precompiled headers (``codecache._HEADER_DIR``, fixed
at import), which every kernel includes. So during a neuron compile:

* Inductor's cache directory is the persistent cache's ``compile-<tag>/inductor`` (checked by
  cache_dir.py), or -- the persistent cache disabled or unusable -- :func:`scratch_dir`, a
  private throw-away directory of this process;
* the ISA probes and the precompiled headers use :func:`host_dir`, built once per host:
  ``<XDG_CACHE_HOME or ~/.cache>/torch_neuronx/inductor-<version tag>``, created 0700 and
  checked like the persistent cache (cache_dir.check_safe) at every compile; when it is unsafe
  or cannot be written, the scratch directory instead (one warning);
* ``codecache._HEADER_DIR`` is pointed at ``<host dir>/precompiled_headers`` for the rest of
  the process (runtime/patches.py lists it), and Inductor's memo of built headers is cleared
  whenever that directory changes, so no header path from elsewhere is reused.

Dynamo's own caches, read before the backend runs, are routed by dynamo_dirs.py.

Kernels that fail to load are handled by kernel_check.py.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile
import threading
import warnings

from torch_neuronx.runtime import env, patches

from . import cache_dir

_lock = threading.RLock()  # held while TORCHINDUCTOR_CACHE_DIR is ours (os.environ is global)
_scratch: str | None = None
_host_warned: set[str] = set()
_header_dir: str | None = None  # where codecache._HEADER_DIR points now (None: not yet ours)

_HEADER_REASON = (
    "Inductor's precompiled headers live in <tempdir>/torchinductor_<user> whatever "
    "TORCHINDUCTOR_CACHE_DIR says, a directory another user can create first and fill; the "
    "neuron backend points them at its private, checked host directory (compile/inductor_dirs.py)"
)


def scratch_dir() -> str:
    """This process's private throw-away Inductor directory (mkdtemp: mode 0700, an
    unguessable name), removed at exit. Checked at every use."""
    global _scratch
    with _lock:
        if _scratch is None or not os.path.isdir(_scratch):
            _scratch = tempfile.mkdtemp(prefix="torchneuronx_inductor_")
            atexit.register(shutil.rmtree, _scratch, True)
        cache_dir.check_safe(_scratch)
        return _scratch


def _host_location() -> str:
    base = env.text("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "torch_neuronx", f"inductor-{cache_dir.version_tag()}")


def host_dir() -> str:
    """The per-host directory of the ISA probes and precompiled headers, or the scratch
    directory (one warning) when it is unsafe or cannot be written."""
    path = _host_location()
    try:
        cache_dir.create_private(path)
        cache_dir.check_safe(path, link_ok=False)
        if not os.access(path, os.W_OK):
            raise PermissionError(f"{path!r} is not writable")
        return path
    except (OSError, cache_dir.UnsafeCacheDirError) as exc:
        with _lock:
            first = path not in _host_warned
            _host_warned.add(path)
        if first:
            warnings.warn(
                f"torch.compile(backend='neuron'): not using {path!r} for Inductor's vector-ISA "
                f"probes and precompiled headers ({type(exc).__name__}: {str(exc)[:300]}); "
                f"they are built in a private directory of this process instead. Make it a "
                f"directory only you can write, or set XDG_CACHE_HOME to one.",
                cache_dir.CacheUnavailableWarning,
                stacklevel=3,
            )
        return scratch_dir()


def _point_headers(host: str) -> None:
    """``codecache._HEADER_DIR`` -> ``<host>/precompiled_headers`` (and its lock directory);
    Inductor's memo of built headers is cleared when the directory changes."""
    global _header_dir
    from torch._inductor import codecache

    target = os.path.join(host, "precompiled_headers")
    if _header_dir == target and codecache._HEADER_DIR == target:
        return
    patches.replace(codecache, "_HEADER_DIR", target, reason=_HEADER_REASON)
    patches.replace(
        codecache, "_HEADER_LOCK_DIR", os.path.join(target, "locks"), reason=_HEADER_REASON
    )
    codecache._precompile_header.cache_clear()
    _header_dir = target


@contextlib.contextmanager
def selected(inductor_dir: str | None):
    """Inductor's directories for one compile: its cache directory is ``inductor_dir`` (None:
    :func:`scratch_dir`), its precompiled headers the host directory. Kernel loads are
    checked (kernel_check.py)."""
    from . import kernel_check

    kernel_check.install()
    with _lock:
        host = host_dir()
        _point_headers(host)
        directory = inductor_dir or scratch_dir()
        old = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
        os.makedirs(directory, exist_ok=True)
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = directory
        try:
            yield directory
        finally:
            if old is None:
                os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
            else:
                os.environ["TORCHINDUCTOR_CACHE_DIR"] = old


@contextlib.contextmanager
def probing():
    """Inductor's vector-ISA probes build their test programs in the host directory."""
    with _lock:
        host = host_dir()
        _point_headers(host)
        old = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = host
        try:
            yield host
        finally:
            if old is None:
                os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
            else:
                os.environ["TORCHINDUCTOR_CACHE_DIR"] = old


def _reset_for_tests() -> None:
    global _header_dir
    with _lock:
        _host_warned.clear()
        _header_dir = None
