"""Fit a collective's fixed cost and achieved bus bandwidth to published nccom-test timings.

The measured-collective model (``perf/collectives.py``) charges, for a group whose widest level
is L (cores of a chip, chips of an instance, instances):

    time = fixed(L) + factor(op, p) * n / busbw(L)

with nccom-test's own bus-bandwidth convention for ``factor`` (as NCCL's tests define it):
2 (p - 1) / p for all-reduce, (p - 1) / p for all-gather, reduce-scatter and all-to-all, 1 for
send/recv. ``fit`` finds fixed(L) and busbw(L) per generation and level by least squares on
log(time) over the calibration rows only (``collective_data.CALIBRATION``); the constants it
returns are the ones written into ``runtime/hardware.py`` (a test checks they agree).
"""

from __future__ import annotations

import math

from .collectives import LEVEL_KEY, bus_factor, levels, op_class
from .target import for_instance

_REP = {"trn1": "trn1.32xlarge", "trn2": "trn2.48xlarge", "trn3": "trn3.48xlarge"}


def placement(gen: str, ranks: int, instances: int) -> list:
    """Global ranks of an nccom-test run: ``ranks`` in all, spread evenly over ``instances``."""
    cpi = for_instance(_REP[gen]).cores_per_instance
    per = ranks // instances
    return [i * cpi + j for i in range(instances) for j in range(per)]


def level_of(gen: str, ranks: int, instances: int) -> str:
    lv = levels(placement(gen, ranks, instances), for_instance(_REP[gen]))
    return LEVEL_KEY[lv[-1].name] if lv else "local"


def _predict(alpha: float, busbw: float, xs) -> list:
    return [alpha + x / busbw for x in xs]


def _loss(alpha, busbw, xs, ts) -> float:
    return sum((math.log(m) - math.log(t)) ** 2 for m, t in zip(_predict(alpha, busbw, xs), ts))


def fit_one(xs, ts, busbw: float | None = None) -> tuple:
    """(fixed seconds, busbw bytes/s) minimising the squared log error; ``busbw`` given: fit
    the fixed cost only. A coarse-to-fine grid in log space (two parameters, no dependencies)."""
    la, lb = math.log(min(ts)), math.log(busbw or 50e9)
    span_a, span_b = 3.0, 0.0 if busbw else 3.0
    for _ in range(40):
        cands = [
            (la + da * span_a / 4, lb + db * span_b / 4)
            for da in range(-4, 5)
            for db in range(-4, 5)
        ]
        la, lb = min(cands, key=lambda c: _loss(math.exp(c[0]), math.exp(c[1]), xs, ts))
        span_a, span_b = span_a * 0.6, span_b * 0.6
    return math.exp(la), math.exp(lb)


#: levels from narrow to wide (a wider level's hierarchical collectives pass through the narrower)
_ORDER = ("core", "chip", "instance", "ultraserver")


def fit(rows) -> dict:
    """{(gen, level): (fixed seconds, busbw bytes/s or None)} from ``rows`` (Measured). A level
    whose rows all have one size gets only a fixed cost (busbw None).

    Operation classes: where a level has rows of both classes (``collectives.op_class``:
    reductions and data movement), each class is fitted on its own rows; the data-movement fit
    is the level's default, keyed ``level``, and the reduction fit is keyed ``level:reduce``.
    A level with one class's rows has only the plain key (both classes use it).

    A level whose rows never reach the bandwidth-bound regime (at its largest size the fitted
    bandwidth term is below the fixed cost) does not determine its bus bandwidth: the slope is
    a few microseconds of difference extrapolated by orders of magnitude. Such a level takes
    the bus bandwidth of the nearest wider level of the same generation that has
    bandwidth-bound rows, and its fixed cost is refitted with that bandwidth. Reason: a wider
    level's runs (a multi-instance all-reduce) move every byte through this level too
    (hierarchical algorithms: reduce-scatter inside the instance, then between instances), so
    they could not reach their measured bus bandwidth if this level's were lower; that bound
    comes from calibration rows only. Trn1's 32-rank all-gather (largest size 512 KiB, 28 us
    above its 151 us fixed cost) would otherwise extrapolate to 18 GB/s, below the 45 GB/s the
    2-instance 64-rank all-reduce measures through the same links. The same holds between the
    classes of one level: a data-movement fit that is not bandwidth-bound takes the bandwidth
    of the level's reduction fit when that one is (Trn2: the 32-rank all-gathers stop at
    512 KiB; the 16-rank all-reduce reaches 512 MiB)."""
    by_level: dict = {}
    for r in rows:
        by_level.setdefault((r.gen, level_of(r.gen, r.ranks, r.instances)), []).append(r)
    groups: dict = {}
    for (gen, level), rs in by_level.items():
        classes = {op_class(r.op) for r in rs}
        for r in rs:
            key = level + ":reduce" if len(classes) > 1 and op_class(r.op) == "reduce" else level
            groups.setdefault((gen, key), []).append(r)
    out: dict = {}
    bound: dict = {}  # (gen, key) -> whether its rows reach the bandwidth-bound regime
    for key, rs in sorted(groups.items()):
        xs = [bus_factor(r.op, r.ranks) * r.size for r in rs]
        ts = [r.time_us * 1e-6 for r in rs]
        if len({r.size for r in rs}) < 2:
            out[key] = (sum(ts) / len(ts), None)
            bound[key] = False
        else:
            out[key] = fit_one(xs, ts)
            bound[key] = max(xs) / out[key][1] >= out[key][0]
    for (gen, key), (_alpha, busbw) in list(out.items()):
        if busbw is None or bound[(gen, key)]:
            continue
        level = key.split(":")[0]
        wider = [level + ":reduce"] + [
            w + c for w in _ORDER[_ORDER.index(level) + 1 :] for c in ("", ":reduce")
        ]
        wider = [out[(gen, w)][1] for w in wider if w != key and bound.get((gen, w))]
        if wider:
            rs = groups[(gen, key)]
            xs = [bus_factor(r.op, r.ranks) * r.size for r in rs]
            out[(gen, key)] = fit_one(xs, [r.time_us * 1e-6 for r in rs], busbw=wider[0])
    return out
