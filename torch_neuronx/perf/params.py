"""The performance model's own parameters: the fixed costs no public document states.

Hardware figures (peaks, bandwidths, latencies) live in ``torch_neuronx/runtime/hardware.py``.
What is here are the model's choices, each an assumption with its reasoning, and each
overridable::

    with torch_neuronx.perf.params.override(eager_launch_s=20e-6, hbm_efficiency=0.8):
        ...

See docs/perf-model.md for how each one enters the model.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading

from torch_neuronx.runtime import hardware as hw


# eq=False: compared and hashed by identity (every change makes a new object), so caches keyed
# by the current parameters stay cheap
@dataclasses.dataclass(frozen=True, eq=False)
class Params:
    #: fixed device-timeline cost of one eager op (one NEFF execution issued by the runtime).
    #: ASSUMPTION: no per-execution figure is published. A mature accelerator stack spends
    #: ~9 us per tiny eager op (8.9 us measured for `a + a` on an NVIDIA H200, reference notes);
    #: an eager Neuron op also pays at least two DMA fixed latencies (load, store: 2 x 1.3 us
    #: [DMA]). We use 10 us.
    eager_launch_s: float = 10e-6
    #: fixed cost of one kernel inside a compiled graph. DERIVED: one DMA transfer's fixed
    #: latency (1.3 us [DMA]); the compiler overlaps the rest of a kernel's DMA with the
    #: previous kernel's compute.
    kernel_overhead_s: float = float(hw.DMA_FIXED_LATENCY)
    #: fixed cost of launching one compiled graph. ASSUMPTION: one NEFF execution, like an
    #: eager op (10 us). The published 437 us [ASYNC] is synchronous mode with vLLM's Python
    #: on top, hidden by asynchronous execution; set this to 437e-6 to model synchronous mode.
    graph_launch_s: float = 10e-6
    #: fraction of the HBM (or DMA) bandwidth a streaming kernel achieves. FITTED: 1.0 on the
    #: Trn1 decode calibration rows (perf/workload_fit.py; the fit lands on the ceiling: each
    #: NeuronCore-v2's DMA engines, 272 GB/s [DMA], already bind below its HBM share). AWS
    #: calls >= 60% MBU good for memory-bound kernels [PERF].
    hbm_efficiency: float = 1.0
    #: fraction of the tile rule's TensorE throughput a matmul reaches (instruction issue,
    #: PSUM accumulation and eviction, DMA waits the tile rule does not see). FITTED: 0.65 on
    #: the prefill rows and the newest Neuron SDK era's (2.24-2.28) training rows of the
    #: workload calibration set (perf/workload_fit.py; it was 0.87 with one training row);
    #: AWS's target for compute-bound engines is >= 90% [PERF], and one unofficial 2048^3
    #: NKI matmul measured 90.9%: the training graphs reach less than a tuned single kernel.
    tensor_efficiency: float = 0.65
    #: model TensorE's warm-up (50% of peak ramping to full over ~3 us after idle [THR]) on
    #: eager matmuls; kernels inside a compiled graph run back to back and stay warm.
    tensor_warmup: bool = True
    #: collectives choose the faster of ring and tree, as NCCL-style libraries do. ASSUMPTION.
    collective_algorithms: tuple = ("ring", "tree")
    #: "measured": a collective costs the fixed cost and achieved bus bandwidth fitted to
    #: published nccom-test runs (``hardware.COLLECTIVE_FIT``); "peak": the alpha-beta model
    #: over hop latencies and link peaks (9-15x faster than those runs; kept for comparison).
    collective_model: str = "measured"


_lock = threading.Lock()
_current = Params()


def current() -> Params:
    return _current


def set(**changes) -> Params:  # noqa: A001 - mirrors dataclasses.replace
    """Replace parameters process-wide; returns the previous value (for restoring)."""
    global _current
    with _lock:
        previous = _current
        _current = dataclasses.replace(_current, **changes)
    return previous


def _restore(previous: Params) -> None:
    global _current
    with _lock:
        _current = previous


@contextlib.contextmanager
def override(**changes):
    """Temporarily replace model parameters (process-wide) inside a ``with`` block."""
    previous = set(**changes)
    try:
        yield _current
    finally:
        _restore(previous)


def describe() -> list[tuple[str, str, str]]:
    """(name, value, reasoning) rows for docs and the CLI."""
    doc = {
        "eager_launch_s": "assumption: one eager NEFF execution; H200 eager op 8.9 us, 2 DMA fixed latencies",
        "kernel_overhead_s": "derived: one DMA fixed latency (1.3 us) [DMA]",
        "graph_launch_s": "assumption: one NEFF execution; 437 us is the synchronous-mode figure [ASYNC]",
        "hbm_efficiency": "fitted: 1.0 of the DMA-capped bandwidth on the workload calibration set (>= 60% MBU counts as good [PERF])",
        "tensor_efficiency": "fitted: 0.65 on the workload calibration set, Neuron SDK 2.2x training + prefill rows (>= 90% is AWS's target [PERF])",
        "tensor_warmup": "published ramp 50%->100% over ~3 us after idle [THR], eager matmuls only",
        "collective_algorithms": "assumption: min(ring, tree) (collective_model='peak' only)",
        "collective_model": "fitted to published nccom-test runs [NCCOM]; 'peak' = alpha-beta",
    }
    p = current()
    return [(f.name, repr(getattr(p, f.name)), doc[f.name]) for f in dataclasses.fields(p)]
