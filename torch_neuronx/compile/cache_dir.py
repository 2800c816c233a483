"""Where the persistent compile cache lives, and whether it is safe and possible to use.

The cache holds compiled shared objects (Inductor's kernels) that this process *loads*: a
directory another user can write is a directory from which that user can run code in our
process. So, as OpenSSH does for its key files (and unlike Inductor, which trusts its
``/tmp/torchinductor_<user>``):

* the default is per user, ``<tempdir>/torchneuronx_<user>/neff_cache`` (the same place in
  the temporary directory as Inductor's own per-user cache), and a directory we create is
  created with mode 0700, and the version tree inside it (``compile-<tag>``) is kept 0700, so
  nothing below it (Inductor's own subdirectories) can be reached by another user;
* a directory that exists -- the configured ``TORCH_NEURONX_NEFF_CACHE_DIR`` or the default
  -- is refused with :class:`UnsafeCacheDirError` when it belongs to another user or is
  group- or world-writable, and so is any directory above it that another (non-root) user
  owns, or that others can write without the sticky bit (they could rename our directory
  away and put theirs in its place). Symbolic links on the way are followed and both the
  link and its target are checked: a link another user owns can be re-pointed at any time.

Being *unable* to write the cache (a read-only directory, a full disk, a quota) is not an
error: :func:`usable` says so, with one warning per directory and process, and the backend
compiles without the persistent cache (Inductor's throw-away directory), as it would with
``TORCH_NEURONX_NEFF_DISABLE_CACHE=1``. A write that fails in the middle of a compile is
handled the same way (:func:`is_write_failure`, cache.py).
"""

from __future__ import annotations

import errno
import hashlib
import os
import platform
import re
import stat
import sys
import tempfile
import threading
import warnings

import torch

from torch_neuronx._version import __version__

from .legality import NeuronCompileError

__all__ = [
    "UnsafeCacheDirError",
    "CacheUnavailableWarning",
    "version_tag",
    "default_root",
    "check_safe",
    "usable",
    "mark_unusable",
    "is_write_failure",
]

CACHE_DIR_ENV = "TORCH_NEURONX_NEFF_CACHE_DIR"

#: layout version of the cache, part of the version tag
CACHE_FORMAT = 1

#: errors that mean "this directory cannot take our files", not "this graph cannot compile"
_WRITE_ERRNOS = frozenset(
    e
    for e in (errno.ENOSPC, errno.EROFS, errno.EACCES, errno.EPERM, getattr(errno, "EDQUOT", None))
    if e is not None
)
# the same conditions as the C/C++ toolchain reports them (a kernel's .so is written by g++)
_WRITE_MESSAGES = ("No space left on device", "Read-only file system", "Disk quota exceeded")


class UnsafeCacheDirError(NeuronCompileError):
    """The compile cache directory (or one above it) can be written by another user."""


class CacheUnavailableWarning(UserWarning):
    """The compile cache directory cannot be written; compiling continues without it."""


def _user() -> str:
    """The effective user's name from the password database (not $USER, which ``su`` may
    leave naming someone else), or ``uid_<n>``."""
    try:
        import pwd

        name = pwd.getpwuid(os.geteuid()).pw_name
    except (KeyError, ImportError):
        name = f"uid_{os.geteuid()}"
    return re.sub(r'[\\/:*?"<>|\s]', "_", name)


def version_tag() -> str:
    """The ``<tag>`` of ``compile-<tag>``: one tree per torch, torch_neuronx, python, machine
    and cache format."""
    parts = [
        f"torch={torch.__version__}",
        f"torch_neuronx={__version__}",
        f"python={sys.version_info[0]}.{sys.version_info[1]}",
        f"machine={platform.machine()}",
        f"format={CACHE_FORMAT}",
    ]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def default_root() -> str:
    """``<tempdir>/torchneuronx_<user>/neff_cache`` (tempdir: $TMPDIR, else /tmp)."""
    return os.path.join(tempfile.gettempdir(), f"torchneuronx_{_user()}", "neff_cache")


def _refuse(path: str, why: str) -> UnsafeCacheDirError:
    return UnsafeCacheDirError(
        f"torch.compile(backend='neuron'): refusing to use the compile cache directory "
        f"{path!r}: {why}. The cache holds compiled code that this process loads, so no other "
        f"user may be able to write it. Use a directory only you can write (e.g. "
        f"chmod 700), or set {CACHE_DIR_ENV} to one; TORCH_NEURONX_NEFF_DISABLE_CACHE=1 "
        f"compiles without the persistent cache."
    )


def _writers(st: os.stat_result) -> str:
    group, others = bool(st.st_mode & 0o020), bool(st.st_mode & 0o002)
    return "its group and others" if group and others else "others" if others else "its group"


def _owner_ok(st: os.stat_result, uid: int, *, allow_root: bool) -> bool:
    return st.st_uid == uid or (allow_root and st.st_uid == 0)


def _check_ancestor(path: str, st: os.stat_result, uid: int, shown: str) -> None:
    """A directory (or link) above the cache: owned by us or root; if others can write it,
    only with the sticky bit (then they cannot rename or remove what we own in it)."""
    if not _owner_ok(st, uid, allow_root=True):
        kind = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "a directory"
        raise _refuse(
            shown, f"{path!r} on its path is {kind} owned by another user (uid {st.st_uid})"
        )
    if stat.S_ISDIR(st.st_mode) and st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
        raise _refuse(
            shown,
            f"{path!r} on its path is writable by {_writers(st)} (mode "
            f"{stat.S_IMODE(st.st_mode):o}) without the sticky bit",
        )


def _check_own_dir(path: str, st: os.stat_result, uid: int, shown: str) -> None:
    """The cache directory itself (and the subdirectories we name): a directory we own
    that neither group nor others can write."""
    what = "it" if path == os.path.realpath(shown) else repr(path)
    if not stat.S_ISDIR(st.st_mode):
        raise _refuse(shown, f"{what} is not a directory")
    if st.st_uid != uid:
        raise _refuse(shown, f"{what} belongs to another user (uid {st.st_uid}; you are {uid})")
    if st.st_mode & 0o022:
        raise _refuse(
            shown, f"{what} is writable by {_writers(st)} (mode {stat.S_IMODE(st.st_mode):o})"
        )


def _prefixes(path: str):
    """'/', '/a', '/a/b', ... of an absolute path."""
    parts = [p for p in path.split(os.sep) if p]
    yield os.sep
    for i in range(1, len(parts) + 1):
        yield os.sep + os.sep.join(parts[:i])


def check_safe(path: str, subdirs: tuple[str, ...] = (), *, link_ok: bool = True) -> None:
    """Raise :class:`UnsafeCacheDirError` unless ``path`` (an existing directory) and the
    existing ``subdirs`` of it may hold code this process loads (module docstring).
    ``link_ok=False``: ``path`` is one the cache creates itself (the version tree), so a
    symbolic link there is refused, as in ``subdirs``."""
    uid = os.geteuid()
    shown = path
    path = os.path.abspath(path)
    if not link_ok and os.path.islink(path):
        raise _refuse(shown, "it is a symbolic link (the cache creates it as a directory)")
    # 1. the path as written: every link and directory on it (lstat: a link is judged by
    #    who owns the link, since its owner decides where it points)
    for p in list(_prefixes(path))[:-1]:
        try:
            st = os.lstat(p)
        except FileNotFoundError:
            break
        _check_ancestor(p, st, uid, shown)
    # 2. where it leads: every directory of the resolved path, then the directory itself
    real = os.path.realpath(path)
    for p in list(_prefixes(real))[:-1]:
        _check_ancestor(p, os.stat(p), uid, shown)
    if os.path.islink(path):
        _check_ancestor(path, os.lstat(path), uid, shown)
    _check_own_dir(real, os.stat(real), uid, shown)
    for sub in subdirs:
        p = os.path.join(real, sub)
        try:
            st = os.lstat(p)
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(st.st_mode):
            raise _refuse(shown, f"{p!r} is a symbolic link (the cache creates it as a directory)")
        _check_own_dir(p, st, uid, shown)


_lock = threading.Lock()
_unusable: dict[str, str] = {}  # realpath -> why (warned once)
_ready: set[str] = set()  # realpath of roots checked writable in this process


def mark_unusable(root: str, exc: BaseException, shown: str | None = None) -> None:
    """Stop using ``root`` for the rest of the process, with one warning (naming ``shown``,
    the directory the user configured, when given)."""
    key = os.path.realpath(root)
    with _lock:
        if key in _unusable:
            return
        why = f"{type(exc).__name__}: {exc}".strip()
        _unusable[key] = why
    warnings.warn(
        f"torch.compile(backend='neuron'): the compile cache directory {shown or root!r} cannot be "
        f"written ({why[:300]}); compiling without the persistent cache for the rest of this "
        f"process. Free space, make it writable, or set {CACHE_DIR_ENV} to another directory.",
        CacheUnavailableWarning,
        stacklevel=2,
    )


def is_unusable(root: str) -> bool:
    with _lock:
        return os.path.realpath(root) in _unusable


def _probe_write(directory: str) -> None:
    """Write, sync and remove a small file in ``directory`` (raises OSError)."""
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".probe-")
    try:
        os.write(fd, b"neuron compile cache write probe\n")
        os.fsync(fd)
    finally:
        os.close(fd)
        os.unlink(tmp)


def create_private(path: str) -> None:
    """Create the missing levels of ``path``, each with mode 0700 (``os.makedirs`` gives
    its mode to the last level only). One that appears meanwhile (another process) is left
    as it is: :func:`check_safe` judges it."""
    for p in _prefixes(os.path.abspath(path)):
        if os.path.lexists(p):
            continue
        try:
            os.mkdir(p, 0o700)
        except FileExistsError:
            continue
        os.chmod(p, 0o700)  # exact, whatever the umask


def _make_private(root: str) -> None:
    """Mode 0700 on the version tree (ours: check_safe said so), so that nothing below it --
    Inductor's own subdirectories, created with the process's umask -- can be reached by
    another user, whatever their modes. A tree left 0755 by an older version is tightened."""
    try:
        if stat.S_IMODE(os.stat(root).st_mode) != 0o700:
            os.chmod(root, 0o700)
    except OSError:
        pass  # a read-only file system: nobody can write below it either


def usable(base: str, root: str, subdirs: tuple[str, ...]) -> bool:
    """Prepare the cache: ``base`` is the configured (or default) directory, ``root`` the
    version-specific tree under it, ``subdirs`` the directories the cache uses below
    ``root``. Creates what is missing (0700), refuses an unsafe directory
    (:class:`UnsafeCacheDirError`), and returns False -- after one warning -- when it
    cannot be written. The safety check runs at every call (it is a few ``stat`` calls);
    the write probe once per directory and process."""
    if is_unusable(root):
        return False
    try:
        create_private(base)
    except OSError as exc:
        if not os.path.isdir(base):
            mark_unusable(root, exc, base)
            return False
    check_safe(base)
    try:
        for d in (root, *(os.path.join(root, s) for s in subdirs)):
            create_private(d)
    except OSError as exc:
        mark_unusable(root, exc, base)
        return False
    check_safe(root, subdirs, link_ok=False)
    _make_private(root)
    with _lock:
        if os.path.realpath(root) in _ready:
            return True
    try:
        _probe_write(os.path.join(root, subdirs[0]) if subdirs else root)
    except OSError as exc:
        mark_unusable(root, exc, base)
        return False
    with _lock:
        _ready.add(os.path.realpath(root))
    return True


def is_write_failure(exc: BaseException, root: str) -> bool:
    """Whether ``exc`` (or an exception it was raised from) is a failed write into the cache
    (full disk, read-only file system, permissions) rather than a failure of the graph."""
    real = os.path.realpath(root)
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno in _WRITE_ERRNOS:
            names = [n for n in (e.filename, e.filename2) if n]
            if not names or any(os.path.realpath(str(n)).startswith(real) for n in names):
                return True
        text = str(e)
        if any(m in text for m in _WRITE_MESSAGES):
            return True
        e = e.__cause__ or e.__context__ or getattr(e, "inner_exception", None)
    return False


def _reset_for_tests() -> None:
    with _lock:
        _unusable.clear()
        _ready.clear()
