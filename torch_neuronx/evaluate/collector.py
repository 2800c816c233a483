"""The engine's collectors: what happens on the neuron device while a workload runs.

One :class:`Collector` watches a region (a script, or N steps of a model) and keeps, per step:

- **placement**: every eager op the driver runs (native or CPU fallback), with the user source
  lines of fallbacks; policy deviations (float64 arithmetic run in float32, ops under autocast)
  with call sites. Source: the driver's per-op callback (``_C._set_perf_callback``), which the
  collector wraps for the duration of the region and forwards to the performance model's own
  hook (``eager/perf_hook.py``), so modeled costs are unchanged;
- **host synchronisation**: every device-to-host read (``.item()``, ``.cpu()``, printing,
  ``bool()``), seen as the model's ``device_to_host`` copy events -- the driver's single
  host-read point (``sync_for_host_read``, counter ``Runtime.HostReadSyncs``) is also read so
  that no sync goes uncounted -- and data-dependent output shapes (``nonzero`` and kin);
- **modeled time**: every event of ``torch_neuronx.perf`` (eager ops, compiled kernels,
  collectives, copies, fallbacks) on the emulated profile, and the same work re-costed on each
  projected profile (eager ops exactly, from their :class:`~torch_neuronx.perf.Work`; compiled
  kernels by scaling their compute and memory times to the profile's peak and bandwidth);
- **memory**: peak allocated / reserved per device per step and a timeline;
- **compilation**: Dynamo's graph breaks and recompilations (its own ``graph_breaks`` and
  ``recompiles`` log artifacts, caught by a handler instead of printed) and the ``neuron``
  backend's per-graph compile records.
"""

from __future__ import annotations

import collections
import logging
import re
import threading
import time

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook

from torch_neuronx import _C
from torch_neuronx import metrics as _metrics
from torch_neuronx.eager import perf_hook
from torch_neuronx.eager.op_policy import HOST_CPU, engine_for
from torch_neuronx.perf import clock, roofline
from torch_neuronx.perf import events as ev
from torch_neuronx.perf import report as perf_report
from torch_neuronx.perf import target as perf_target
from torch_neuronx.perf import work as wk

from .callsite import source_line, user_site

#: ops whose output shape depends on the data: the host must read a count before it can go on
DATA_DEPENDENT = {
    "aten::nonzero",
    "aten::masked_select",
    "aten::unique",
    "aten::_unique",
    "aten::_unique2",
    "aten::unique_consecutive",
    "aten::unique_dim",
    "aten::repeat_interleave",
    "aten::argwhere",
}
_MAX_SITES = 8


class _Sites:
    """Counts per key with the first distinct user call sites."""

    def __init__(self):
        self.count: collections.Counter = collections.Counter()
        self.sites: dict = collections.defaultdict(collections.Counter)

    def add(self, key: str, site: str | None) -> None:
        self.count[key] += 1
        if site is not None and (site in self.sites[key] or len(self.sites[key]) < _MAX_SITES):
            self.sites[key][site] += 1

    def rows(self) -> list:
        return [
            {
                "name": k,
                "count": n,
                "sites": [
                    {"site": s, "count": c, "line": source_line(s)}
                    for s, c in self.sites[k].most_common()
                ],
            }
            for k, n in self.count.most_common()
        ]


def _classify_read(site: str, nbytes: float) -> str:
    text = source_line(site)
    if re.search(r"\bprint\(|f\"|f'|\.format\(|repr\(|str\(", text):
        return "printing"
    if ".item()" in text:
        return ".item()"
    if ".tolist()" in text:
        return ".tolist()"
    if ".numpy()" in text:
        return ".numpy()"
    if re.search(r"\bbool\(|^\s*(if|while|assert|elif)\b|\band\b|\bor\b|\bnot\b", text):
        return "bool(tensor)"
    if ".cpu()" in text or ".to(" in text or 'to("cpu")' in text:
        return ".cpu()/.to(cpu)"
    return ".item()" if nbytes <= 8 else "device-to-host copy"


class _Step:
    def __init__(self, index: int):
        self.index = index
        self.wall_start = time.perf_counter()
        self.wall_s = 0.0
        self.device_s: collections.Counter = collections.Counter()  # device -> modeled seconds
        self.flops = 0.0
        self.bytes = 0.0
        self.by_kind: collections.Counter = collections.Counter()
        self.projected: collections.Counter = (
            collections.Counter()
        )  # profile key -> modeled s (busiest device)
        self.projected_compiled: collections.Counter = collections.Counter()
        self.host_syncs = 0
        self.ops = 0
        self.fallbacks = 0
        self.loss = None
        self.grad_norm = None
        self.mem_peak_allocated: dict = {}
        self.mem_peak_reserved: dict = {}
        self.partial = False  # work after the last step boundary (not a whole step)

    def to_dict(self) -> dict:
        return {
            "index": self.index,
            "wall_s": self.wall_s,
            "modeled_device_s": max(self.device_s.values(), default=0.0),
            "modeled_by_device_s": {str(k): v for k, v in self.device_s.items()},
            "flops": self.flops,
            "bytes": self.bytes,
            "modeled_by_kind_s": dict(self.by_kind),
            "projected_s": dict(self.projected),
            "projected_compiled_s": dict(self.projected_compiled),
            "host_syncs": self.host_syncs,
            "ops": self.ops,
            "fallback_ops": self.fallbacks,
            "partial": self.partial,
            "loss": self.loss,
            "grad_norm": self.grad_norm,
            "peak_allocated": {str(k): v for k, v in self.mem_peak_allocated.items()},
            "peak_reserved": {str(k): v for k, v in self.mem_peak_reserved.items()},
        }


class _LogCatcher(logging.Handler):
    def __init__(self, sink):
        super().__init__(logging.DEBUG)
        self.sink = sink

    def emit(self, record):
        try:
            self.sink(record)
        except Exception:  # a report must never break the user's run
            pass


class Collector:
    """Collects everything the report needs while it is active (``start()`` .. ``stop()``)."""

    def __init__(self, profiles: list, *, steps_limit: int | None = None, on_step=None):
        self.profiles = profiles
        self.steps_limit = steps_limit
        self.on_step = on_step
        self._lock = threading.RLock()
        self.steps: list = []
        self._cur = _Step(0)
        self.placement_native: collections.Counter = collections.Counter()
        self.fallback = _Sites()
        self.fallback_time_s: collections.Counter = collections.Counter()
        self.host_reads = _Sites()  # kind -> sites
        self.data_dependent = _Sites()
        self.float64 = _Sites()
        self.autocast = _Sites()
        self.op_time: dict = {}  # (kind, name) -> [count, modeled s, flops, bytes]
        self.op_projected: dict = collections.defaultdict(
            collections.Counter
        )  # profile -> name -> s
        self.graph_breaks: list = []
        self.recompiles: list = []
        self.memory_timeline: list = []  # (wall s since start, device, allocated, reserved)
        self.devices_seen: set = set()
        self.optimizers: list = []
        self.touched_neuron = False
        self._internal = 0
        self._events_since_sample = 0
        self._t0 = time.perf_counter()
        self._sync_counter0 = 0
        self._hooks: list = []
        self._loggers: list = []
        self._active = False
        self._cur_target = perf_target.current()
        self._ratio_cache: dict = {}
        self.stop_requested = False
        self.explicit = False
        self.pending_loss = None

    # -- region ---------------------------------------------------------------------------
    def start(self) -> Collector:
        self._t0 = time.perf_counter()
        self._sync_counter0 = _metrics.get_counter_value("Runtime.HostReadSyncs") or 0
        clock.add_listener(self._on_event)
        clock.acquire()
        if hasattr(_C, "_set_perf_callback"):
            _C._set_perf_callback(self._on_op)
        self._hooks.append(register_optimizer_step_post_hook(self._after_optimizer_step))
        self._catch_dynamo_logs()
        for d in range(torch.neuron.device_count()):
            torch.neuron.reset_peak_memory_stats(d)
        self._cur = _Step(0)
        self._active = True
        return self

    def stop(self) -> None:
        if not self._active:
            return
        self._active = False
        if hasattr(_C, "_set_perf_callback"):
            _C._set_perf_callback(perf_hook._on_op)
        clock.release()
        clock.remove_listener(self._on_event)
        for h in self._hooks:
            h.remove()
        self._hooks.clear()
        for log, handler, level, prop in self._loggers:
            log.removeHandler(handler)
            log.setLevel(level)
            log.propagate = prop
        self._loggers.clear()
        from torch._logging._internal import log_state

        for name in ("graph_breaks", "recompiles"):
            if getattr(self, f"_enabled_{name}", False):
                log_state.artifact_names.discard(name)
        for d in range(torch.neuron.device_count()):  # tensors on the device count as using it
            if torch.neuron.max_memory_allocated(d) > 0 or any(
                d in s.mem_peak_allocated and s.mem_peak_allocated[d] for s in self.steps
            ):
                self.touched_neuron = True
                self.devices_seen.add(d)
        if self._cur.ops or self._cur.device_s:  # work after the last step boundary
            self._close_step(partial=True)
        self.host_read_counter = (
            _metrics.get_counter_value("Runtime.HostReadSyncs") or 0
        ) - self._sync_counter0

    def internal(self):
        """Context in which the collector's own reads (loss values) are not reported."""
        coll = self

        class _Ctx:
            def __enter__(self):
                coll._internal += 1

            def __exit__(self, *a):
                coll._internal -= 1

        return _Ctx()

    # -- steps ----------------------------------------------------------------------------
    def _after_optimizer_step(self, optimizer, args, kwargs) -> None:
        first = next((p for g in optimizer.param_groups for p in g["params"]), None)
        if first is not None and first.device.type == "cpu":
            return  # a reference optimizer on the host (e.g. a CPU twin of the run): not a device step
        if optimizer not in self.optimizers:
            self.optimizers.append(optimizer)
        if not self.explicit:  # an explicit torch_neuronx.evaluate.step() delimits instead
            self.mark_step()

    def mark_step(self, loss=None) -> None:
        if not self._active:
            return
        loss = self.pending_loss if loss is None else loss
        self.pending_loss = None
        with self.internal():
            if loss is not None:
                self._cur.loss = (
                    float(loss.detach().float().cpu())
                    if isinstance(loss, torch.Tensor)
                    else float(loss)
                )
            self._cur.grad_norm = self._grad_norm()
        self._close_step()
        if self.on_step is not None:
            self.on_step(len(self.steps), self.steps_limit)
        if self.steps_limit is not None and len(self.steps) >= self.steps_limit:
            self.stop_requested = True
            raise StepLimitReached(len(self.steps))

    def _grad_norm(self):
        grads = [
            p.grad
            for o in self.optimizers
            for g in o.param_groups
            for p in g["params"]
            if p.grad is not None
        ]
        if not grads:
            return None
        return float(sum(g.detach().float().pow(2).sum().cpu() for g in grads) ** 0.5)

    def _close_step(self, partial: bool = False) -> None:
        with self._lock:
            s = self._cur
            s.wall_s = time.perf_counter() - s.wall_start
            for d in sorted(self.devices_seen):
                s.mem_peak_allocated[d] = torch.neuron.max_memory_allocated(d)
                s.mem_peak_reserved[d] = torch.neuron.max_memory_reserved(d)
                torch.neuron.reset_peak_memory_stats(d)
                self._sample_memory(d)
            s.partial = partial
            if not partial or s.ops or s.device_s:
                self.steps.append(s)
            self._cur = _Step(len(self.steps))

    def _sample_memory(self, d: int) -> None:
        self.memory_timeline.append(
            (
                time.perf_counter() - self._t0,
                d,
                torch.neuron.memory_allocated(d),
                torch.neuron.memory_reserved(d),
            )
        )

    # -- per-op callback (wraps the perf model's eager hook) -------------------------------
    def _on_op(self, op_name, device, args, outputs, host_ns, fallback) -> None:
        perf_hook._on_op(op_name, device, args, outputs, host_ns, fallback)
        if self._internal or not self._active:
            return
        try:
            self._account_op(op_name, device, args, outputs, fallback)
        except Exception:  # accounting must never break the user's op
            pass

    def _account_op(self, op_name, device, args, outputs, fallback) -> None:
        self.touched_neuron = True
        self.devices_seen.add(device)
        base = op_name.split(".", 1)[0]
        engine = engine_for(op_name)
        with self._lock:
            self._cur.ops += 1
            if fallback or engine == HOST_CPU:
                self._cur.fallbacks += 1
                self.fallback.add(op_name, user_site(3))
            else:
                self.placement_native[op_name] += 1
            if base in DATA_DEPENDENT:
                self.data_dependent.add(base, user_site(3))
                self._cur.host_syncs += 1
            if any(
                isinstance(a, torch.Tensor) and a.dtype in (torch.float64, torch.complex128)
                for a in args
            ):
                self.float64.add(op_name, user_site(3))
            if torch.is_autocast_enabled("neuron") if _autocast_takes_device() else False:
                self.autocast.add(op_name, user_site(3))
        if (
            not fallback
            and engine != HOST_CPU
            and base not in perf_hook._COPIES
            and base != "aten::_local_scalar_dense"
            and not perf_report._is_view_op(op_name)
        ):
            w = wk.op_work(op_name, tuple(args), None, outputs, engine, kind=ev.OP)
            with self._lock:
                for p in self.profiles:
                    c = roofline.cost_of(w, p.target.core, in_graph=False)
                    self._cur.projected[p.key] += c.duration
                    self.op_projected[p.key][op_name] += c.duration
                    wk_in = dataclass_replace_kind(w)
                    self._cur.projected_compiled[p.key] += roofline.cost_of(
                        wk_in, p.target.core, in_graph=True
                    ).duration

    # -- perf listener ----------------------------------------------------------------------
    def _on_event(self, event) -> None:
        if not self._active or self._internal:
            return
        c = event.cost
        with self._lock:
            s = self._cur
            s.device_s[event.device] += c.duration
            s.flops += c.flops
            s.bytes += c.bytes if c.kind in (ev.OP, ev.KERNEL) else 0.0
            s.by_kind[c.kind] += c.duration
            self.devices_seen.add(event.device)
            self.touched_neuron = True
            row = self.op_time.setdefault((c.kind, c.name), [0, 0.0, 0.0, 0.0])
            row[0] += 1
            row[1] += c.duration
            row[2] += c.flops
            row[3] += c.bytes
            if c.kind == ev.FALLBACK:
                self.fallback_time_s[c.name] += c.duration
            if c.kind in (ev.KERNEL, ev.GRAPH, ev.COLLECTIVE, ev.COPY, ev.FALLBACK):
                # not re-costed per op: scale to each profile (copies/fallbacks/collectives: as is)
                for p in self.profiles:
                    d = self._scaled(c, p) if c.kind == ev.KERNEL else c.duration
                    s.projected[p.key] += d
                    s.projected_compiled[p.key] += d
                    self.op_projected[p.key][c.name] += d
            if c.kind == ev.COPY and c.name == "device_to_host" and not self._internal:
                site = user_site(2)
                self.host_reads.add(_classify_read(site, c.bytes), site)
                s.host_syncs += 1
            self._events_since_sample += 1
            if self._events_since_sample >= 50:
                self._events_since_sample = 0
                self._sample_memory(event.device)

    def _scaled(self, c, p) -> float:
        key = (p.key, c.dtype or "bf16")
        r = self._ratio_cache.get(key)
        if r is None:
            cur = self._cur_target.core
            dt = c.dtype or "bf16"
            r = (
                cur.tensor_peak(dt) / p.target.core.tensor_peak(dt),
                cur.hbm_bw / p.target.core.hbm_bw,
            )
            self._ratio_cache[key] = r
        return max(c.compute_s * r[0], c.memory_s * r[1]) + c.overhead_s

    # -- Dynamo --------------------------------------------------------------------------------
    def _catch_dynamo_logs(self) -> None:
        from torch._logging._internal import log_state

        for artifact, qname, sink in (
            ("graph_breaks", "torch._dynamo.symbolic_convert.__graph_breaks", self._on_graph_break),
            ("graph_breaks", "torch._dynamo.convert_frame.__graph_breaks", self._on_graph_break),
            ("recompiles", "torch._dynamo.guards.__recompiles", self._on_recompile),
        ):
            if not log_state.is_artifact_enabled(artifact):
                log_state.enable_artifact(artifact)
                setattr(self, f"_enabled_{artifact}", True)
            log = logging.getLogger(qname)
            h = _LogCatcher(sink)
            self._loggers.append((log, h, log.level, log.propagate))
            log.addHandler(h)
            log.setLevel(logging.DEBUG)
            log.propagate = False

    def _on_graph_break(self, record) -> None:
        msg = record.getMessage()
        loc = re.search(r"in user code at (.+?):(\d+)", msg)
        reason = re.search(r"Graph Break Reason: (.+)", msg)
        explanation = re.search(r"Explanation: (.+)", msg)
        hint = re.findall(r"Hint: (.+)", msg)
        self.graph_breaks.append(
            {
                "site": f"{loc.group(1)}:{loc.group(2)}" if loc else user_site(2),
                "line": source_line(f"{loc.group(1)}:{loc.group(2)}") if loc else "",
                "reason": (reason.group(1).strip() if reason else msg.splitlines()[0])[:400],
                "explanation": explanation.group(1).strip()[:400] if explanation else "",
                "hints": [h.strip() for h in hint][:3],
                "step": len(self.steps),
            }
        )

    def _on_recompile(self, record) -> None:
        msg = record.getMessage()
        fn = re.search(r"Recompiling function (\S+) in (.+?):(\d+)", msg)
        reasons = [ln.strip()[2:] for ln in msg.splitlines() if ln.strip().startswith("- ")]
        self.recompiles.append(
            {
                "function": f"{fn.group(1)} ({fn.group(2)}:{fn.group(3)})" if fn else "?",
                "site": user_site(2),
                "line": source_line(user_site(2)),
                "reasons": reasons[:5],
                "step": len(self.steps),
            }
        )


class StepLimitReached(BaseException):
    """Raised at the N-th step boundary of ``--steps N``: the run stops there (BaseException so
    that a script's ``except Exception`` does not swallow it)."""


def dataclass_replace_kind(w):
    import dataclasses

    return dataclasses.replace(w, kind=ev.KERNEL)


_AUTOCAST_DEVICE = None


def _autocast_takes_device() -> bool:
    global _AUTOCAST_DEVICE
    if _AUTOCAST_DEVICE is None:
        try:
            torch.is_autocast_enabled("cpu")
            _AUTOCAST_DEVICE = True
        except TypeError:
            _AUTOCAST_DEVICE = False
    return _AUTOCAST_DEVICE
