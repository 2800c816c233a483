"""Forwards the performance model's events to the driver's torch.profiler session.

While a profiler session with ``ProfilerActivity.PrivateUse1`` records, the driver calls
``_on_start`` / ``_on_stop`` (on the thread that starts / stops the profiler). The session
holds the model on (``perf.acquire``) and listens to it; each event is handed to the driver on
the thread that launched the work, while the launching ATen op is still running, so the driver
links it to that op (Kineto's correlation id) like a CUDA kernel to the op that launched it.
"""

from __future__ import annotations

import threading

from torch_neuronx import _C, perf

__all__ = ["install", "forward"]

_lock = threading.Lock()
_listening = False


def forward(event) -> None:
    """Hands one ``perf.Event`` to the driver's recording session."""
    c = event.cost
    _C._trace_device_work(
        event.device,
        c.kind,
        c.name,
        c.engine,
        c.shapes,
        c.dtype,
        c.bound,
        c.detail,
        float(c.flops),
        float(c.bytes),
        round((event.end - event.start) * 1e9),
    )


def _on_start() -> None:
    global _listening
    with _lock:
        if _listening:
            return
        perf.add_listener(forward)
        perf.acquire()
        _listening = True


def _on_stop() -> None:
    global _listening
    with _lock:
        if not _listening:
            return
        _listening = False
        perf.release()
        perf.remove_listener(forward)


def install() -> None:
    """Connects the driver's profiler sessions to the performance model (once, at import)."""
    _C._set_device_trace_callbacks(_on_start, _on_stop)
