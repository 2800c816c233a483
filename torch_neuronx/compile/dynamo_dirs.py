"""Dynamo's own caches during a neuron compile: private and checked.

Dynamo reads caches of its own *before* the backend runs, from Inductor's cache directory as
it is then (the user's ``<tempdir>/torchinductor_<user>``): with ``torch.compiler.config.job_id``
set, its profile-guided (automatic dynamic) state, a pickle, from
``<dir>/dynamo/code_state_<key>.pkl`` (``torch._dynamo.pgo``), and with ``caching_precompile``
its precompiled packages, pickles too, from ``<dir>/dynamo/<source id>/entry``
(``torch._dynamo.package.DynamoCache``). Unpickling runs code. So (:func:`install`,
when the backend module loads; runtime/patches.py lists them) Dynamo's frame compiler
``convert_frame._compile`` runs a frame compiled for neuron inside a :class:`dynamo_region`
(so does the ``torch.compile`` wrapper while it wraps a function for neuron), and inside one
``pgo.code_state_path`` and ``DiskDynamoCache.path_prefix`` give paths under
:func:`dynamo_dir`: the ``dynamo`` directory of the Inductor cache directory the backend will
use (the persistent cache's ``compile-<tag>/inductor``, or ``inductor_dirs.scratch_dir``), created
0700 and checked (cache_dir.check_safe) at every use. Other backends' compiles are untouched.
"""

from __future__ import annotations

import functools
import os
import threading

from torch_neuronx.runtime import patches

from . import cache, cache_dir, inductor_dirs

_lock = threading.Lock()
_region = threading.local()  # .depth: dynamo_region()s entered on this thread
_installed = False

_DYNAMO_REASON = (
    "while Dynamo compiles a frame for backend='neuron' it reads its {what}, a pickle, from "
    "the checked private directory the backend compiles in, not from "
    "<tempdir>/torchinductor_<user>, which another user can create first and fill "
    "(compile/dynamo_dirs.py); unchanged for other backends"
)


def in_dynamo_region() -> bool:
    """Whether this thread is compiling a frame for neuron (or wrapping one)."""
    return getattr(_region, "depth", 0) > 0


class dynamo_region:
    """A region (this thread) in which Dynamo works for neuron: its own caches are read from
    and written to :func:`dynamo_dir` (module docstring). Re-entrant."""

    __slots__ = ()

    def __enter__(self) -> None:
        _region.depth = getattr(_region, "depth", 0) + 1

    def __exit__(self, *exc) -> None:
        _region.depth -= 1


def dynamo_dir() -> str:
    """The ``dynamo`` directory of the Inductor cache directory the next neuron compile uses
    (the persistent cache's ``compile-<tag>/inductor``, or ``inductor_dirs.scratch_dir()``
    when the cache is disabled or cannot be written), created 0700 and checked like the
    cache; an unsafe persistent cache raises UnsafeCacheDirError, as the backend would."""
    persistent = cache.PersistentCache.current()
    base = persistent.inductor_dir if persistent.enabled else inductor_dirs.scratch_dir()
    path = os.path.join(base, "dynamo")
    cache_dir.create_private(path)
    cache_dir.check_safe(base, ("dynamo",), link_ok=False)
    return path


def targets_neuron(compiler_fn) -> bool:
    """Whether Dynamo's ``compiler_fn`` (its wrappers unwrapped: the debug wrapper,
    torch.compile's ``_TorchCompileWrapper``) is the neuron backend."""
    fn = compiler_fn
    for _ in range(16):
        if fn is None:
            return False
        if getattr(fn, "compiler_name", None) == "neuron" or getattr(fn, "__name__", "") in (
            "neuron",
            "neuron_backend",
        ):
            return True
        fn = getattr(fn, "_torchdynamo_orig_backend", None) or getattr(fn, "compiler_fn", None)
    return False


def install() -> None:
    """Dynamo's frame compiler runs a neuron frame in a :class:`dynamo_region`, where its
    profile-guided state and precompiled packages live in :func:`dynamo_dir` (module
    docstring). Idempotent."""
    global _installed
    from torch._dynamo import convert_frame, package, pgo

    with _lock:
        if _installed:
            return
        compile_frame = getattr(convert_frame._compile, "__wrapped__", convert_frame._compile)
        code_state_path = getattr(pgo.code_state_path, "__wrapped__", pgo.code_state_path)
        path_prefix = getattr(
            package.DiskDynamoCache.path_prefix, "__wrapped__", package.DiskDynamoCache.path_prefix
        )

        @functools.wraps(compile_frame)
        def neuron_compile_frame(*args, **kwargs):
            fn = kwargs.get("compiler_fn", args[5] if len(args) > 5 else None)
            if not targets_neuron(fn):
                return compile_frame(*args, **kwargs)
            with dynamo_region():
                return compile_frame(*args, **kwargs)

        @functools.wraps(code_state_path)
        def neuron_code_state_path(cache_key: str) -> str | None:
            path = code_state_path(cache_key)
            if path is None or not in_dynamo_region():
                return path
            return os.path.join(dynamo_dir(), os.path.basename(path))

        @functools.wraps(path_prefix)
        def neuron_path_prefix(self) -> str:
            if not in_dynamo_region():
                return path_prefix(self)
            return dynamo_dir()

        patches.replace(
            convert_frame,
            "_compile",
            neuron_compile_frame,
            reason="Dynamo compiles a frame for backend='neuron' in dynamo_dirs.dynamo_region, "
            "where its own caches (profile-guided state, precompiled packages) are read from "
            "checked private directories; other backends' frames are compiled unchanged",
        )
        patches.replace(
            pgo,
            "code_state_path",
            neuron_code_state_path,
            reason=_DYNAMO_REASON.format(what="profile-guided (automatic dynamic) state"),
        )
        patches.replace(
            package.DiskDynamoCache,
            "path_prefix",
            neuron_path_prefix,
            reason=_DYNAMO_REASON.format(what="precompiled packages (caching_precompile)"),
        )
        _installed = True
