"""Which part of a step's collectives is exposed: the one overlap rule every estimator uses.

On Trainium a collective runs on dedicated collective-communication cores, asynchronously to
the compute engines, which only trigger it and later wait for its completion; the runtime and
compiler use that to overlap collectives with independent compute in adjacent layers
(tensor parallelism, FSDP) [OVERLAP]. Data-parallel frameworks issue the gradient collectives in
buckets while the backward pass still runs (PyTorch DDP: all-reduce per ~25 MB bucket as soon as
its gradients are ready [DDP]; FSDP: reduce-scatter per unit during backward, all-gather of the
next unit prefetched; Megatron/NxD: the same for data-parallel buckets and for the backward
all-gather / reduce-scatter of sequence-parallel tensor parallelism).

THE RULE (an assumption built on those descriptions, not fitted to anything): collectives
``c_1 .. c_k`` issued one after another while ``compute_s`` of *independent* compute runs are
hidden under that compute, all but the last: the last has no compute left to hide under.

    exposed = c_k + max(0, (c_1 + ... + c_{k-1}) - compute_s)
    step    = compute_s + blocking_s + exposed

``blocking_s`` holds the collectives whose result the next compute needs at once (a forward
tensor-parallel all-gather or all-reduce, a decode step's all-reduces, a ZeRO-1 gradient
reduce-scatter after the last micro-batch): those are never hidden. Not modeled: DMA or HBM
contention between the overlapped collective and the compute (the overlap page names it as the
main cost of overlap), compute that slows while a collective runs.
"""

from __future__ import annotations

from collections.abc import Sequence


def exposed(compute_s: float, collectives_s: Sequence[float]) -> float:
    """Seconds of ``collectives_s`` (in issue order) not hidden under ``compute_s`` of
    independent compute (the module's rule)."""
    cs = [float(c) for c in collectives_s if c > 0]
    if not cs:
        return 0.0
    last = cs[-1]
    return last + max(0.0, sum(cs[:-1]) - max(float(compute_s), 0.0))


def step_time(
    compute_s: float,
    *,
    blocking_s: float = 0.0,
    overlapped_s: Sequence[float] = (),
    hideable_s: float | None = None,
) -> float:
    """Modeled step time: compute + blocking collectives + the exposed part of the
    overlappable ones. ``hideable_s``: the part of ``compute_s`` independent of the overlappable
    collectives (default: all of it), e.g. the backward pass for gradient collectives."""
    hide = compute_s if hideable_s is None else min(hideable_s, compute_s)
    return float(compute_s) + float(blocking_s) + exposed(hide, overlapped_s)


def split(collectives_s: Sequence[float], compute_s: float) -> dict:
    """{"collective_s", "exposed_s", "hidden_s"} of overlappable collectives under compute."""
    total = float(sum(c for c in collectives_s if c > 0))
    e = exposed(compute_s, collectives_s)
    return {"collective_s": total, "exposed_s": e, "hidden_s": total - e}


def accumulated_step(
    micro_s: float,
    micro_batches: int = 1,
    *,
    once_s: float = 0.0,
    blocking_s: float = 0.0,
) -> float:
    """Modeled step time under gradient accumulation (micro-batch mode): ``micro_batches``
    forward + backward passes of ``micro_s`` each (their own collectives already composed by
    ``step_time``), then the once-per-step work -- the optimizer update ``once_s`` and the
    data-parallel gradient sync ``blocking_s`` (after the last micro-batch's backward, nothing
    left to hide it under) -- once, never per micro-batch."""
    if micro_batches < 1:
        raise ValueError(f"micro_batches must be >= 1, got {micro_batches}")
    return micro_batches * float(micro_s) + float(once_s) + float(blocking_s)
