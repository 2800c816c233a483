"""The one reader of torch_neuronx's environment variables.

Every layer reads its variables through these functions, so each kind of variable has one
syntax everywhere: on/off switches accept 1/0, true/false, yes/no, on/off (any case); an
enumerated variable accepts exactly its listed values. Anything else is an error that names
the variable and the accepted values, instead of being silently read as "off" by one variable
and "on" by another. docs/environment.md lists every variable.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = ["EnvError", "invalid", "flag", "choice", "integer", "text"]

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


class EnvError(ValueError):
    """An environment variable holds a value its reader does not accept."""


def invalid(name: str, value: str, problem: str, accepted: str) -> EnvError:
    """The one shape of every environment error (raised by the caller): the variable, the
    value, what is wrong with it, and the accepted values, so that the message alone says what
    to change, whichever reader or parser (topology's core lists and sizes) found it."""
    return EnvError(f"{name}={value!r} {problem}; accepted values: {accepted}")


def _raw(name: str, environ: Mapping[str, str] | None) -> str | None:
    value = (os.environ if environ is None else environ).get(name)
    if value is None:
        return None
    value = value.strip()
    return value or None  # set but empty reads as unset, as in most POSIX tools


def flag(name: str, default: bool = False, *, environ: Mapping[str, str] | None = None) -> bool:
    """An on/off switch: 1/true/yes/on or 0/false/no/off (any case); unset or empty -> default.

    Every reader takes ``environ``, a mapping read instead of os.environ (tests, and a
    topology computed for another process's environment)."""
    value = _raw(name, environ)
    if value is None:
        return default
    low = value.lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise invalid(
        name,
        value,
        "is not an on/off value",
        f"{', '.join(_TRUE)} (on) or {', '.join(_FALSE)} (off)",
    )


def choice(
    name: str,
    choices: tuple[str, ...] | list[str],
    default: str,
    *,
    environ: Mapping[str, str] | None = None,
) -> str:
    """One of `choices` (compared case-insensitively, returned as spelled in `choices`)."""
    value = _raw(name, environ)
    if value is None:
        return default
    for c in choices:
        if value.lower() == c.lower():
            return c
    raise invalid(name, value, "is not recognised", ", ".join(choices))


def integer(
    name: str,
    default: int | None,
    minimum: int | None = None,
    *,
    environ: Mapping[str, str] | None = None,
) -> int | None:
    """A decimal integer (optionally with a lower bound); unset or empty -> default."""
    value = _raw(name, environ)
    if value is None:
        return default
    accepted = "a decimal integer" + ("" if minimum is None else f" >= {minimum}")
    try:
        number = int(value, 10)
    except ValueError:
        raise invalid(name, value, "is not an integer", accepted) from None
    if minimum is not None and number < minimum:
        raise invalid(name, value, "is too small", accepted)
    return number


def text(
    name: str, default: str | None = None, *, environ: Mapping[str, str] | None = None
) -> str | None:
    """A free-form value (paths, names); unset or empty -> default."""
    value = _raw(name, environ)
    return default if value is None else value
