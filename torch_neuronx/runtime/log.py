"""TorchNeuron's logging variables, through Python's ``logging``.

- ``TORCH_NEURONX_LOG_LEVEL``: 0 ERROR, 1 WARNING (default), 2 INFO, 3 DEBUG: the level of the
  ``torch_neuronx`` logger, parent of one logger per layer (``torch_neuronx.runtime``,
  ``torch_neuronx.perf``, ``torch_neuronx.profiler``, ``torch_neuronx.eager``,
  ``torch_neuronx.compile``, ``torch_neuronx.distributed``). The C++ driver logs through the
  same loggers (its lines above the level are never built).
- ``TORCH_NEURONX_LOG_FILE``: write the lines to this file (appended) instead of stderr.
- ``TORCH_NEURONX_ENABLE_STACK_TRACE=1``: every device op records the user's Python source line
  that called it (a captured stack per op, a few microseconds each), so warnings, errors and
  fallback reports name ``file:line in function``.

Lines look like TorchNeuron's: ``[Neuron] [WARNING] torch_neuronx.eager: message``.
Other code configures nothing here: it asks for ``logger("eager")`` and logs. Warnings meant
for users still go through ``warnings.warn`` / ``TORCH_WARN`` as well, as PyTorch's do.
"""

from __future__ import annotations

import logging
import os
import sys

from torch_neuronx.runtime import env

__all__ = ["LEVELS", "ROOT", "logger", "configure", "level", "stack_trace_enabled", "user_source"]

#: TORCH_NEURONX_LOG_LEVEL value -> logging level
LEVELS = {0: logging.ERROR, 1: logging.WARNING, 2: logging.INFO, 3: logging.DEBUG}
ROOT = "torch_neuronx"
FORMAT = "[Neuron] [%(levelname)s] %(name)s: %(message)s"
_LAYERS = ("runtime", "perf", "profiler", "eager", "compile", "distributed", "nki", "tools")

_handler: logging.Handler | None = None
_stack_trace = False
# Frames in these directories are library code; the user's line is the innermost frame outside.
_LIBRARY_DIRS: tuple[str, ...] = ()


def logger(layer: str) -> logging.Logger:
    """The logger of a layer, e.g. ``logger("eager")`` -> ``torch_neuronx.eager``."""
    return logging.getLogger(f"{ROOT}.{layer}" if layer else ROOT)


def level() -> int:
    """The TORCH_NEURONX_LOG_LEVEL in force (0-3)."""
    return _level_number


def stack_trace_enabled() -> bool:
    return _stack_trace


def configure(environ=None) -> None:
    """(Re)reads the variables and configures the ``torch_neuronx`` logger and the driver.

    Called once at import; tests call it again after changing the environment."""
    global _handler, _stack_trace, _level_number, _LIBRARY_DIRS
    # an enumerated variable (0 error, 1 warning, 2 info, 3 debug): env.choice names the
    # accepted values in its error, for "debug" as for "4"
    _level_number = int(
        env.choice("TORCH_NEURONX_LOG_LEVEL", ("0", "1", "2", "3"), "1", environ=environ)
    )
    path = env.text("TORCH_NEURONX_LOG_FILE", None, environ=environ)
    _stack_trace = env.flag("TORCH_NEURONX_ENABLE_STACK_TRACE", False, environ=environ)

    root = logging.getLogger(ROOT)
    root.setLevel(LEVELS[_level_number])
    if _handler is not None:
        root.removeHandler(_handler)
        _handler.close()
    _handler = (
        logging.FileHandler(path, mode="a", encoding="utf-8")
        if path
        else logging.StreamHandler(sys.stderr)
    )
    _handler.setFormatter(logging.Formatter(FORMAT))
    root.addHandler(_handler)
    # Our lines are formatted here; the application's root handlers would print them twice.
    root.propagate = False
    for layer in _LAYERS:
        logging.getLogger(f"{ROOT}.{layer}")

    import torch

    # the torch_neuronx package folder: this file's parent's parent (importing the package
    # from here would close an import circle, since the package imports this module)
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    _LIBRARY_DIRS = (os.path.dirname(torch.__file__) + os.sep, package + os.sep)
    _LIBRARY_DIRS += (os.path.dirname(logging.__file__) + os.sep,)  # the standard library
    _configure_driver()


def _configure_driver() -> None:
    from torch_neuronx import _C

    _C._set_log_sink(_from_driver, _level_number)
    _C._set_op_source_tracking(_stack_trace, list(_LIBRARY_DIRS))


def _from_driver(level_number: int, name: str, message: str) -> None:
    logging.getLogger(name).log(LEVELS.get(level_number, logging.DEBUG), message)


def user_source(skip: int = 1) -> str:
    """``"file.py:42 in fn"``: the innermost caller frame outside torch and torch_neuronx
    ("" when there is none). Python layers use it for their own messages."""
    frame = sys._getframe(skip)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith("<") and not filename.startswith(_LIBRARY_DIRS):
            return f"{filename}:{frame.f_lineno} in {frame.f_code.co_name}"
        frame = frame.f_back
    return ""


_level_number = 1
