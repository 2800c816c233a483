"""Functions that run outside Dynamo, without importing Dynamo to say so.

The collector's callbacks and the host-read wrappers must never be traced: when a compiled
function's eager remainder (after a graph break) runs an op, Dynamo would otherwise trace these
frames and report their locks and hooks as graph breaks of the user's code.
``torch.compiler.disable`` does that, but it imports ``torch._dynamo`` when it wraps (about 2.4
CPU s, a third of an evaluated empty script's cost), in every evaluated script, also the many
that never compile.

So the wrapping waits for Dynamo. Until ``torch._dynamo`` is imported nothing can trace, and a
wrapper calls its function directly. When it is imported (by ``torch.compile`` or anything
else), an import hook registers the wrappers' code with Dynamo as skipped, before any frame can
be traced; from then on a wrapper calls its function through ``torch._dynamo.disable`` (so
nothing it calls is traced either). The wrappers also carry ``_torchdynamo_disable``, the mark
Dynamo reads on a function a traced caller calls: such a call is not inlined, exactly as for a
``torch.compiler.disable``-d function.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import sys
import threading
from collections.abc import Callable

_DYNAMO = "torch._dynamo"
_lock = threading.Lock()
_hooked = False
#: set once Dynamo is fully imported and the wrappers' code is registered as skipped
_ready = False


def untraced(fn: Callable, reason: str) -> Callable:
    """`fn`, never traced by Dynamo; Dynamo is not imported for it."""
    disabled: list[Callable] = []

    @functools.wraps(fn)
    def call_untraced(*args, **kwargs):
        if not _ready:  # no Dynamo (or not yet wholly imported): nothing can trace this call
            return fn(*args, **kwargs)
        if not disabled:
            disabled.append(sys.modules[_DYNAMO].disable(fn, reason=reason, wrapping=False))
        return disabled[0](*args, **kwargs)

    call_untraced._torchdynamo_disable = True  # type: ignore[attr-defined]
    call_untraced._torchdynamo_disable_msg = reason  # type: ignore[attr-defined]
    _skip_when_dynamo_loads()
    return call_untraced


#: the code object every wrapper untraced() makes shares
_WRAPPER_CODE = next(
    c for c in untraced.__code__.co_consts if getattr(c, "co_name", "") == "call_untraced"
)


def _skip_wrappers(dynamo) -> None:
    """Registers the wrappers' code as skipped (`dynamo` is the loaded torch._dynamo)."""
    global _ready
    dynamo.eval_frame.skip_code(_WRAPPER_CODE)
    _ready = True


def _skip_when_dynamo_loads() -> None:
    global _hooked
    with _lock:
        if _hooked:
            return
        _hooked = True
        dynamo = sys.modules.get(_DYNAMO)
        if dynamo is not None and getattr(dynamo, "disable", None) is not None:
            _skip_wrappers(dynamo)
        else:
            sys.meta_path.insert(0, _AfterDynamoImport())


class _AfterDynamoImport(importlib.abc.MetaPathFinder):
    """Finds torch._dynamo as Python would, with a loader that calls _skip_wrappers after it."""

    def find_spec(self, name, path=None, target=None):
        if name != _DYNAMO:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return None
        sys.meta_path[:] = [f for f in sys.meta_path if f is not self]
        spec.loader = _ThenSkip(spec.loader)
        return spec


class _ThenSkip(importlib.abc.Loader):
    def __init__(self, inner) -> None:
        self._inner = inner

    def create_module(self, spec):
        return self._inner.create_module(spec)

    def exec_module(self, module) -> None:
        self._inner.exec_module(module)
        _skip_wrappers(module)

    def __getattr__(self, name):  # get_source, get_filename, ...: the real loader's
        return getattr(self._inner, name)
