"""torch_neuronx.perf: modeled Trainium time for the work of the emulated NeuronCore.

The emulated core computes on the host CPU, so its wall time says nothing about Trainium. This
layer gives every piece of device work a **modeled** Trainium duration from a documented,
sourced model (docs/perf-model.md; figures in ``torch_neuronx/runtime/hardware.py``) and keeps
a clock per device::

    import torch, torch_neuronx
    with torch_neuronx.perf.measure() as m:
        y = model(x)                       # eager ops, compiled graphs, collectives, copies
    print(m.summary()["device_time_s"])    # modeled seconds on the emulated instance
    print(m.table())                       # per-op breakdown: time, MFU, HBM fraction, bound

Layering: this package imports only ``torch_neuronx.runtime`` (and PyTorch). The eager,
compile, distributed and NKI layers call :mod:`.report` when :func:`recording` is true;
while nobody measures, they skip the model entirely.

No Trainium was used to build or check this model; docs/perf-model.md compares its
predictions with every public reference figure we found.
"""

from __future__ import annotations

from . import clock, params  # noqa: F401
from .clock import (  # noqa: F401
    acquire,
    add_listener,
    devices,
    recording,
    release,
    remove_listener,
    reset,
    totals,
)
from .clock import (
    now as device_time,
)
from .events import Cost, Event, Work  # noqa: F401
from .measure import Measurement, measure  # noqa: F401

__all__ = [
    "measure",
    "Measurement",
    "record",
    "recording",
    "enable",
    "disable",
    "reset",
    "device_time",
    "totals",
    "devices",
    "add_listener",
    "remove_listener",
    "acquire",
    "release",
    "params",
    "Cost",
    "Event",
    "Work",
    "self_costed",
]

_enabled_by_api = False

#: low-level entry point: put an already computed Cost on device ``device_index``'s timeline
record = clock.record


def self_costed(op_name: str) -> None:
    """Declares that op ``op_name`` ("ns::op") records its own cost (e.g. an NKI kernel), so
    the eager hook does not cost it again."""
    from .report import self_costed as declare

    declare(op_name)


def enable() -> None:
    """Keep the device clocks running outside ``measure()`` regions (e.g. for a whole
    program; read them with :func:`device_time` / :func:`totals`)."""
    global _enabled_by_api
    if not _enabled_by_api:
        _enabled_by_api = True
        acquire()


def disable() -> None:
    global _enabled_by_api
    if _enabled_by_api:
        _enabled_by_api = False
        release()
