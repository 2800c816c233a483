"""``with torch_neuronx.perf.measure() as m: ...``: the modeled Trainium time of a region.

While the block runs, every piece of device work (eager ops, compiled kernels, collectives,
copies, CPU-fallback ops) is costed and kept; ``m.summary()`` gives totals and ``m.by_op()``
a per-op breakdown. Every time is **modeled** (the emulator's wall time says nothing about
Trainium). Regions may nest and overlap, from any thread; each sees the work of all threads on
the devices it watches.

MFU is FLOPs / (modeled time x the logical core's dense BF16 TensorE peak) -- the usual
convention of quoting against the training dtype's peak, so FP32 work shows as low MFU (FP32
runs at a quarter of the BF16 rate). The HBM fraction is bytes / (modeled time x the logical
core's HBM bandwidth).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from torch_neuronx.runtime import hardware

from . import clock
from . import events as ev
from . import target as _target


class Measurement:
    def __init__(self, devices: Iterable[int] | None = None, price_per_hour: float | None = None):
        self.devices = None if devices is None else frozenset(int(d) for d in devices)
        self.price_per_hour = price_per_hour
        self.events: list = []
        self._lock = threading.Lock()
        self._active = False

    # -- the region -------------------------------------------------------------------------
    def __enter__(self) -> Measurement:
        clock.add_listener(self._on_event)
        clock.acquire()
        self._active = True
        return self

    def __exit__(self, *exc) -> None:
        self._active = False
        clock.release()
        clock.remove_listener(self._on_event)

    def _on_event(self, event: ev.Event) -> None:
        if self.devices is None or event.device in self.devices:
            with self._lock:
                self.events.append(event)

    def reset(self) -> None:
        """Forget what was recorded so far (the region keeps measuring)."""
        with self._lock:
            self.events.clear()

    # -- results ----------------------------------------------------------------------------
    def _snapshot(self) -> list:
        with self._lock:
            return list(self.events)

    def summary(self, kind: str | None = None) -> dict:
        """Totals: modeled device time (the busiest device's; devices run in parallel), per
        device figures, busy time per engine, FLOPs, bytes, MFU, HBM fraction, cost.

        ``likely_range_s``: the range the model was off by on published cases of ``kind`` of
        work (``perf/ranges.py``: kernel, training, decode, prefill); default: training when
        the region ran a backward op, else kernel. ``overlap``: the busiest device's step with
        its collectives overlapped as data-parallel gradient buckets (``perf/overlap.py``: all
        but the last hidden under the device's other work) -- the time when those collectives
        are asynchronous; ``device_time_s`` keeps every piece of work one after another."""
        from . import overlap, ranges

        events = self._snapshot()
        tgt = _target.current()
        peak = tgt.core.tensor_peak("bf16")
        bw = tgt.core.hbm_bw
        per: dict = {}
        for e in events:
            d = per.setdefault(
                e.device,
                {
                    "time_s": 0.0,
                    "busy_s": {},
                    "flops": 0.0,
                    "bytes": 0.0,
                    "events": 0,
                    "by_kind_s": {},
                },
            )
            c = e.cost
            d["time_s"] += c.duration
            if c.kind == ev.COLLECTIVE:
                d.setdefault("_coll", []).append(c.duration)
            d["flops"] += c.flops
            d["bytes"] += c.bytes if c.kind in (ev.OP, ev.KERNEL) else 0.0
            d["events"] += 1
            d["by_kind_s"][c.kind] = d["by_kind_s"].get(c.kind, 0.0) + c.duration
            for engine, s in c.busy:
                d["busy_s"][engine] = d["busy_s"].get(engine, 0.0) + s
        for d in per.values():
            t = d["time_s"]
            d["mfu"] = d["flops"] / (t * peak) if t else 0.0
            d["hbm_fraction"] = d["bytes"] / (t * bw) if t else 0.0
        time_s = max((d["time_s"] for d in per.values()), default=0.0)
        flops = sum(d["flops"] for d in per.values())
        nbytes = sum(d["bytes"] for d in per.values())
        n = max(len(per), 1)
        busy: dict = {}
        for d in per.values():
            for k, v in d["busy_s"].items():
                busy[k] = busy.get(k, 0.0) + v
        price = hardware.price_per_hour(tgt.instance.name, self.price_per_hour)
        coll = {k: d.pop("_coll", []) for k, d in per.items()}
        busiest = max(per, key=lambda k: per[k]["time_s"], default=None)
        cs = coll.get(busiest, [])
        other = (per[busiest]["time_s"] - sum(cs)) if busiest is not None else 0.0
        ov = overlap.split(cs, other)
        ov["device_time_s"] = other + ov["exposed_s"]
        if kind is None:
            kind = "training" if any("backward" in e.cost.name for e in events) else "kernel"
        lo, hi = ranges.likely(time_s, kind, tgt.core.generation)
        return {
            "modeled": True,
            "instance": tgt.instance.name,
            "generation": tgt.core.generation,
            "lnc": tgt.core.lnc,
            "device_time_s": time_s,
            "likely_range_s": (lo, hi),
            "range_kind": kind,
            "range_note": ranges.note(kind, tgt.core.generation),
            "overlap": ov,
            "devices": per,
            "busy_s": busy,
            "flops": flops,
            "bytes": nbytes,
            "mfu": flops / (time_s * n * peak) if time_s else 0.0,
            "hbm_fraction": nbytes / (time_s * n * bw) if time_s else 0.0,
            "events": len(events),
            "peak_flops_per_device": peak,
            "hbm_bw_per_device": bw,
            "price_usd_per_hour": price,
            "price_source": (
                tgt.instance.price_usd_per_hour.note
                if self.price_per_hour is None
                else "passed by the caller"
            ),
            "instance_cost_usd": (time_s * price / 3600.0) if price is not None else None,
            # a cost is time x price: its likely range is the time's (issue 23, item 8)
            "likely_instance_cost_usd": (lo * price / 3600.0, hi * price / 3600.0)
            if price is not None
            else None,
        }

    def by_op(self) -> list:
        """One row per (kind, name): count, modeled time, FLOPs, bytes, MFU, HBM fraction,
        engine, what bounds it; sorted by modeled time, largest first."""
        tgt = _target.current()
        peak, bw = tgt.core.tensor_peak("bf16"), tgt.core.hbm_bw
        rows: dict = {}
        total = 0.0
        for e in self._snapshot():
            c = e.cost
            r = rows.setdefault(
                (c.kind, c.name),
                {
                    "name": c.name,
                    "kind": c.kind,
                    "engine": c.engine,
                    "count": 0,
                    "time_s": 0.0,
                    "flops": 0.0,
                    "bytes": 0.0,
                    "bounds": {},
                },
            )
            r["count"] += 1
            r["time_s"] += c.duration
            r["flops"] += c.flops
            r["bytes"] += c.bytes
            r["bounds"][c.bound] = r["bounds"].get(c.bound, 0) + 1
            total += c.duration
        out = []
        for r in rows.values():
            t = r["time_s"]
            r["mfu"] = r["flops"] / (t * peak) if t else 0.0
            r["hbm_fraction"] = (
                (r["bytes"] / (t * bw) if t else 0.0) if r["kind"] in (ev.OP, ev.KERNEL) else 0.0
            )
            r["share"] = t / total if total else 0.0
            r["bound"] = max(r.pop("bounds").items(), key=lambda kv: kv[1])[0]
            out.append(r)
        return sorted(out, key=lambda r: -r["time_s"])

    def table(self, limit: int = 20) -> str:
        """A plain-text report of the summary and the top ops."""
        s = self.summary()
        lines = [
            f"modeled Trainium time on {s['instance']} (LNC={s['lnc']}): {s['device_time_s'] * 1e3:.3f} ms "
            f"(likely {s['likely_range_s'][0] * 1e3:.3g}-{s['likely_range_s'][1] * 1e3:.3g} ms, "
            f"{s['range_note']}), "
            f"{s['flops'] / 1e9:.3f} GFLOP, MFU {s['mfu']:.1%}, HBM {s['hbm_fraction']:.1%}"
        ]
        lines.append(
            f"{'op':<44}{'kind':<11}{'engine':<9}{'count':>7}{'modeled ms':>12}{'share':>8}"
            f"{'MFU':>8}{'HBM':>8}  bound"
        )
        for r in self.by_op()[:limit]:
            lines.append(
                f"{r['name'][:43]:<44}{r['kind']:<11}{r['engine']:<9}{r['count']:>7}"
                f"{r['time_s'] * 1e3:>12.4f}{r['share']:>8.1%}{r['mfu']:>8.1%}{r['hbm_fraction']:>8.1%}"
                f"  {r['bound']}"
            )
        return "\n".join(lines)


def measure(
    devices: Iterable[int] | None = None, price_per_hour: float | None = None
) -> Measurement:
    """A region whose device work is costed: ``with measure() as m: ...; m.summary()``.
    ``devices``: device indices to watch (default: all). ``price_per_hour``: your instance
    price in USD (default: the hardware table's best public figure, if any)."""
    return Measurement(devices, price_per_hour)
