"""The user's source line behind a piece of device work.

A frame is "user code" when its file is outside PyTorch, this package and the Python standard
library -- the line a user would edit. ``user_site()`` walks the current Python stack from the
innermost frame outwards and returns the first such frame as ``"file.py:42 in fn"``."""

from __future__ import annotations

import os
import sys
import sysconfig

import torch

_SKIP = tuple(
    os.path.dirname(p) + os.sep
    for p in {torch.__file__, os.path.join(os.path.dirname(os.path.dirname(__file__)), "x")}
) + tuple(
    p + os.sep for p in {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"]} if p
)
#: third-party libraries whose frames are not the user's either (the call site is in the script)
_LIB_MARKERS = (
    os.sep + "site-packages" + os.sep + "transformers" + os.sep,
    os.sep + "site-packages" + os.sep + "accelerate" + os.sep,
)
_extra_user_roots: list = []


def add_user_root(path: str) -> None:
    """Frames under ``path`` count as the user's even when they are below a skipped folder
    (e.g. a script kept inside the package's examples)."""
    _extra_user_roots.append(os.path.abspath(path))


def _is_user(filename: str) -> bool:
    if not filename or filename.startswith("<"):
        return False
    if any(filename.startswith(r) for r in _extra_user_roots):
        return True
    if filename.startswith(_SKIP):
        return False
    return not any(m in filename for m in _LIB_MARKERS)


is_user = _is_user  # public name (findings.py reads tracebacks' frames)


def user_frame(skip: int = 1):
    """(filename, lineno, function) of the innermost user frame, or None."""
    f = sys._getframe(skip)
    while f is not None:
        code = f.f_code
        if _is_user(code.co_filename):
            return code.co_filename, f.f_lineno, code.co_name
        f = f.f_back
    return None


def user_site(skip: int = 2) -> str:
    fr = user_frame(skip)
    if fr is None:
        return "<no user frame>"
    fn = fr[2]
    if fn.startswith(_RESUME):  # the rest of a compiled function after a graph break
        fn = fn[len(_RESUME) :].rsplit("_at_", 1)[0]
    return f"{fr[0]}:{fr[1]} in {fn}"


#: Dynamo names the code that runs the rest of function f after a graph break at line N
#: "torch_dynamo_resume_in_f_at_N"; the user's function is f
_RESUME = "torch_dynamo_resume_in_"


def source_line(site: str) -> str:
    """The text of the line a ``"file:line in fn"`` site names ('' when unreadable)."""
    import linecache

    try:
        path, rest = site.rsplit(":", 1)
        line = int(rest.split(" ", 1)[0])
    except ValueError:
        return ""
    return linecache.getline(path, line).strip()
