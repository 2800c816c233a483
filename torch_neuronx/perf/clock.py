"""The device clocks: per device, the modeled Trainium time its work has taken.

Each device's work runs one piece after another on its timeline (one queue per device; the
model does not overlap consecutive pieces), so recording a cost of duration d at time t puts
the event at [t, t + d) and moves the device's clock to t + d. Devices advance independently.

Recording is off unless somebody asked for it: a ``measure()`` region, a profiler, or
``enable()``. Callers on hot paths check :func:`recording` (a module-global read) before doing
any work; when it turns on or off, the C++ eager path's flag follows (``_C._perf_set_enabled``
when the driver has it), so eager ops pay nothing for the model while nobody measures.

Thread-safe: one lock guards the clocks; listeners are called outside it, in record order per
device."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable

from . import events as ev

_lock = threading.RLock()
_enablers = 0
_on = False  # read without the lock on hot paths: a stale read only skips or adds one record
_listeners: tuple = ()
_seq = itertools.count()
_native_flag: Callable[[bool], None] | None = None


class _DeviceClock:
    __slots__ = ("now", "busy", "flops", "bytes", "events")

    def __init__(self):
        self.now = 0.0
        self.busy: dict = {}
        self.flops = 0.0
        self.bytes = 0.0
        self.events = 0


_clocks: dict[int, _DeviceClock] = {}


def recording() -> bool:
    """True while somebody is measuring; callers skip all model work otherwise."""
    return _on


def _set_on(value: bool) -> None:
    global _on
    _on = value
    flag = _native_flag
    if flag is not None:
        flag(value)


def set_native_flag(fn: Callable[[bool], None] | None) -> None:
    """Registers the setter of the C++ eager path's flag (called by the layer that installs
    the eager hook); it is called now and on every on/off change."""
    global _native_flag
    with _lock:
        _native_flag = fn
        if fn is not None:
            fn(_on)


def acquire() -> None:
    """Turns recording on (counted: every acquire needs a release)."""
    global _enablers
    with _lock:
        _enablers += 1
        if _enablers == 1:
            _set_on(True)


def release() -> None:
    global _enablers
    with _lock:
        if _enablers <= 0:
            raise RuntimeError("torch_neuronx.perf: release() without a matching acquire()")
        _enablers -= 1
        if _enablers == 0:
            _set_on(False)


def add_listener(fn: Callable[[ev.Event], None]) -> None:
    """``fn(event)`` is called for every recorded event (e.g. by a profiler integration)."""
    global _listeners
    with _lock:
        _listeners = _listeners + (fn,)


def remove_listener(fn: Callable[[ev.Event], None]) -> None:
    global _listeners
    with _lock:
        _listeners = tuple(f for f in _listeners if f is not fn)


def record(device: int, cost: ev.Cost) -> ev.Event:
    """Puts ``cost`` on device ``device``'s timeline and returns the event. Records even when
    :func:`recording` is off (callers decide; the check is theirs to make cheaply)."""
    with _lock:
        c = _clocks.get(device)
        if c is None:
            c = _clocks[device] = _DeviceClock()
        start = c.now
        c.now = start + cost.duration
        for engine, seconds in cost.busy:
            c.busy[engine] = c.busy.get(engine, 0.0) + seconds
        c.flops += cost.flops
        c.bytes += cost.bytes
        c.events += 1
        event = ev.Event(device, start, c.now, cost, next(_seq), threading.get_ident())
        listeners = _listeners
    for fn in listeners:
        fn(event)
    return event


def now(device: int) -> float:
    """Modeled seconds of work recorded on ``device`` since the last reset."""
    with _lock:
        c = _clocks.get(device)
        return c.now if c else 0.0


def totals(device: int) -> dict:
    with _lock:
        c = _clocks.get(device)
        if c is None:
            return {"time_s": 0.0, "busy_s": {}, "flops": 0.0, "bytes": 0.0, "events": 0}
        return {
            "time_s": c.now,
            "busy_s": dict(c.busy),
            "flops": c.flops,
            "bytes": c.bytes,
            "events": c.events,
        }


def devices() -> list[int]:
    with _lock:
        return sorted(_clocks)


def reset(device: int | None = None) -> None:
    """Sets one device's clock (or every device's) back to zero."""
    with _lock:
        if device is None:
            _clocks.clear()
        else:
            _clocks.pop(device, None)
