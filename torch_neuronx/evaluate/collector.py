"""The engine's collectors: what happens on the neuron device while a workload runs.

One :class:`Collector` watches a region (a script, or N steps of a model) and keeps, per step:

- **placement**: every eager op the driver runs (native or CPU fallback), with the user source
  lines of fallbacks; policy deviations (float64 arithmetic run in float32, ops under autocast)
  with call sites; unsupported features met (``eager/unsupported_features.report``, observed
  for the region). Source: the driver's per-op callback, which the collector observes for the
  duration of the region (``eager/perf_hook.add_op_observer``: the performance model's own hook
  keeps costing each op, and nested collectors each see every op);
- **host synchronisation**: every device-to-host read, classified by the call that made it:
  the Python-level reads (``.item()``, ``float()``, ``bool()``, ``.tolist()``, ``.cpu()``,
  ``.to("cpu")``, printing) through wrapped ``torch.Tensor`` methods (``host_reads.py``), any
  other transfer as the model's ``device_to_host`` copy event named after its op; the driver's
  single host-read point (counter ``Runtime.HostReadSyncs``) is read as a cross-check; and
  data-dependent output shapes (``nonzero`` and kin) from the op callback;
- **modeled time**: every event of ``torch_neuronx.perf`` (eager ops, compiled kernels,
  collectives, copies, fallbacks) on the emulated profile, and the same piece of work
  re-costed with each projected profile's hardware figures (``perf.recost``: from the
  :class:`~torch_neuronx.perf.Work` or arguments the cost was computed from; only NKI kernels,
  simulated on the emulated generation, are scaled);
- **memory**: peak allocated / reserved per device per step and a timeline;
- **compilation**: Dynamo's graph breaks and recompilations (its own ``graph_breaks`` and
  ``recompiles`` log artifacts, caught by a handler instead of printed) and the ``neuron``
  backend's per-graph compile records.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import re
import threading
import time
import weakref

import torch

from torch_neuronx import metrics as _metrics
from torch_neuronx.eager import perf_hook
from torch_neuronx.eager.op_policy import engine_for, is_data_dependent
from torch_neuronx.perf import clock, recost
from torch_neuronx.perf import events as ev
from torch_neuronx.perf import target as perf_target
from torch_neuronx.runtime import patches
from torch_neuronx.runtime.engines import Engine
from torch_neuronx.runtime.op_names import strip_overload

from . import advice, host_reads
from .callsite import source_line, user_site
from .steps import StepLimitReached, StepTracker  # noqa: F401 (fake.py imports it here)
from .untraced import untraced

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
        self.advice = advice.Tally()  # what advice.py's findings need of this step

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
        # reads made while a graph compiles (Inductor's constant folding .item()s the uniform
        # constants it folds): paid once per compilation, not per step (host_reads.compiling)
        self.compile_time_reads = _Sites()
        self.float64 = _Sites()
        self.autocast = _Sites()
        self.unsupported = _Sites()  # feature -> call sites
        self.unsupported_advice: dict = {}
        self._patches = contextlib.ExitStack()  # the scoped patches of the region
        self.op_time: dict = {}  # (kind, name) -> [count, modeled s, flops, bytes]
        self.op_projected: dict = collections.defaultdict(
            collections.Counter
        )  # profile -> name -> s
        self.graph_breaks: list = []
        self.recompiles: list = []
        self.memory_timeline: list = []  # (wall s since start, device, allocated, reserved)
        self.devices_seen: set = set()
        # the step boundaries, loss and gradient norm (steps.py, the one step tracker)
        self.tracker = StepTracker(
            count="device",
            steps_limit=steps_limit,
            quiet=self.internal,
            on_step=self._step_ended,
            manual="detect",
        )
        self.optimizer_sites = weakref.WeakKeyDictionary()  # optimizer -> where it was built
        self.compile_failures: list = []  # the neuron backend's failures (also swallowed ones)
        self.touched_neuron = False
        # where torch.cuda.is_available() said False: a GPU script picks its device there
        # (minGPT's Trainer: 'cuda' if available else 'cpu'), the line to fix when the
        # workload never reaches neuron
        self.cuda_checks: collections.Counter = collections.Counter()
        self._internal = 0
        self._events_since_sample = 0
        self._t0 = time.perf_counter()
        self._sync_counter0 = 0
        self._loggers: list = []
        self._active = False
        self._cur_target = perf_target.current()
        self._recost_cache: dict = {}  # id(cost) -> (cost, {profile: (s, compiled s)})
        self.scaled_costs = 0  # events without a basis (NKI kernels): scaled, not re-costed
        self._thread = threading.local()  # .op: the eager op being reported on this thread

    # -- region ---------------------------------------------------------------------------
    def start(self) -> Collector:
        self._t0 = time.perf_counter()
        self._bf16_ratio = advice.bf16_over_fp32(perf_target.current().core)
        self._sync_counter0 = _metrics.get_counter_value("Runtime.HostReadSyncs") or 0
        # the callbacks run outside Dynamo: when a compiled function's eager remainder (after a
        # graph break) runs an op, Dynamo would otherwise try to trace these frames and report
        # their locks and hooks as graph breaks of the user's code
        self._on_event_cb = _untraced(self._on_event)
        self._on_op_cb = _untraced(self._on_op)
        clock.add_listener(self._on_event_cb)
        clock.acquire()
        perf_hook.add_op_observer(self._on_op_cb)
        self.tracker.start()
        self._watch_optimizer_construction()
        self._watch_cuda_checks()
        host_reads.watch(self._on_host_read)
        self._watch_unsupported()
        self._watch_autocast()
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
        perf_hook.remove_op_observer(self._on_op_cb)
        clock.release()
        clock.remove_listener(self._on_event_cb)
        host_reads.unwatch(self._on_host_read)
        self._patches.close()
        self.tracker.stop()
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

    def _watch_optimizer_construction(self) -> None:
        """Where each optimizer was built: an optimizer over CPU copies of a model that runs on
        neuron trains nothing on the device, and the report names the line that built it."""
        real = torch.optim.Optimizer.__init__
        sites = self.optimizer_sites

        def __init__(opt, *a, **k):
            real(opt, *a, **k)
            with contextlib.suppress(TypeError):  # an optimizer that refuses weak references
                sites.setdefault(opt, user_site(2))

        self._patches.enter_context(
            patches.scoped(
                torch.optim.Optimizer,
                "__init__",
                __init__,
                reason="torch_neuronx.evaluate: the line that built each optimizer, for the report",
            )
        )

    def _watch_cuda_checks(self) -> None:
        """The user's lines where ``torch.cuda.is_available()`` returned False (observed: the
        value returned is the real one)."""
        real = torch.cuda.is_available
        coll = self

        def is_available() -> bool:
            ok = real()
            if not ok and coll._active and not coll._internal:
                site = user_site(2)
                if site != "<no user frame>":
                    coll.cuda_checks[site] += 1
            return ok

        self._patches.enter_context(
            patches.scoped(
                torch.cuda,
                "is_available",
                is_available,
                reason="torch_neuronx.evaluate: where a GPU script's device check said no CUDA "
                "(the line to fix when nothing ran on neuron)",
            )
        )

    def _watch_unsupported(self) -> None:
        """Sees every unsupported feature the workload meets (the eager layer warns once per
        process; the report wants each call site)."""
        from torch_neuronx.eager import unsupported_features

        real = unsupported_features.report
        coll = self

        def report(feature: str, advice: str) -> None:
            if coll._active and not coll._internal:
                with coll._lock:
                    coll.unsupported.add(feature, user_site(2))
                    coll.unsupported_advice[feature] = advice
            return real(feature, advice)

        self._patches.enter_context(
            patches.scoped(
                unsupported_features,
                "report",
                report,
                reason="torch_neuronx.evaluate: each unsupported feature's call sites, for the "
                "report (the eager layer warns once per process)",
            )
        )

    def _watch_autocast(self) -> None:
        """Tracks ``torch.autocast`` regions per thread: the ops of a neuron region that produce
        the autocast dtype are the deviations by policy. (The ops autocast casts run with its
        dispatch key excluded, where ``torch.is_autocast_enabled`` reads False, so the flag
        cannot tell them apart.)"""
        cls = torch.amp.autocast_mode.autocast
        real_enter, real_exit = cls.__enter__, cls.__exit__
        local = self._thread

        def __enter__(am):
            out = real_enter(am)
            on = am.device == "neuron" and am._enabled
            local.autocast = [*getattr(local, "autocast", []), am.fast_dtype if on else None]
            return out

        def __exit__(am, *exc):
            if getattr(local, "autocast", None):
                local.autocast = local.autocast[:-1]
            return real_exit(am, *exc)

        why = "torch_neuronx.evaluate: the autocast regions of each thread, for the report"
        self._patches.enter_context(patches.scoped(cls, "__enter__", __enter__, reason=why))
        self._patches.enter_context(patches.scoped(cls, "__exit__", __exit__, reason=why))

    def _on_host_read(self, kind: str, site: str) -> None:
        """A Python-level read of a device tensor (``host_reads``): its kind and call site."""
        if self._internal or not self._active:
            return
        with self._lock:
            self.host_reads.add(kind, site)
            self._cur.host_syncs += 1

    # -- steps (the tracker delimits them; steps.py) ----------------------------------------
    @property
    def optimizers(self) -> list:
        """The optimizers whose steps are the device's steps."""
        return self.tracker.optimizers

    @property
    def optimizer_order(self) -> list:
        return self.tracker.order

    @property
    def host_optimizers(self) -> list:
        """Optimizers over CPU tensors that stepped (not the device's steps)."""
        return self.tracker.host_optimizers

    @property
    def explicit(self) -> bool:
        return self.tracker.explicit

    @explicit.setter
    def explicit(self, value: bool) -> None:
        self.tracker.explicit = value

    def mark_step(self, loss=None) -> None:
        if self._active:
            self.tracker.mark_step(loss)

    def _step_ended(self, loss, grad_norm) -> None:
        self._cur.loss, self._cur.grad_norm = loss, grad_norm
        self._close_step()
        if self.on_step is not None:
            self.on_step(len(self.steps), self.steps_limit)

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

    # -- per-op observer (of the perf model's eager hook; called before the op is costed) ----
    def _on_op(self, op_name, device, args, outputs, host_ns, fallback) -> None:
        self._thread.op = op_name  # names the transfer events this op records (below)
        if self._internal or not self._active:
            return
        try:
            self._account_op(op_name, device, args, outputs, fallback)
        except Exception:  # accounting must never break the user's op
            pass

    def _account_op(self, op_name, device, args, outputs, fallback) -> None:
        self.touched_neuron = True
        self.devices_seen.add(device)
        base = strip_overload(op_name)
        engine = engine_for(op_name)
        with self._lock:
            self._cur.ops += 1
            if fallback or engine == Engine.host:
                self._cur.fallbacks += 1
                self.fallback.add(op_name, user_site(3))
            else:
                self.placement_native[op_name] += 1
            if is_data_dependent(base) and host_reads.compiling():
                self.compile_time_reads.add(base, user_site(3))
            elif is_data_dependent(base):
                self.data_dependent.add(base, user_site(3))
                self._cur.host_syncs += 1
            if any(
                isinstance(a, torch.Tensor) and a.dtype in (torch.float64, torch.complex128)
                for a in args
            ):
                self.float64.add(op_name, user_site(3))
            region = getattr(self._thread, "autocast", None)
            if region and region[-1] is not None and _produces(outputs, region[-1]):
                self.autocast.add(op_name, user_site(3))

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
            s.advice.add(c, self._bf16_ratio)
            self.devices_seen.add(event.device)
            self.touched_neuron = True
            row = self.op_time.setdefault((c.kind, c.name), [0, 0.0, 0.0, 0.0])
            row[0] += 1
            row[1] += c.duration
            row[2] += c.flops
            row[3] += c.bytes
            if c.kind == ev.FALLBACK:
                self.fallback_time_s[c.name] += c.duration
            if c.basis is None and c.kind != ev.GRAPH:
                self.scaled_costs += 1
            for key, (t, tc) in self._projected(c).items():
                s.projected[key] += t
                s.projected_compiled[key] += tc
                self.op_projected[key][c.name] += t
            if c.kind == ev.COPY and c.name == "device_to_host" and not host_reads.in_read():
                # a transfer outside the wrapped Tensor reads: named after the op that made it
                op = getattr(self._thread, "op", None) or "?"
                if host_reads.compiling():
                    self.compile_time_reads.add(f"device-to-host transfer ({op})", user_site(2))
                else:
                    self.host_reads.add(f"device-to-host transfer ({op})", user_site(2))
                    s.host_syncs += 1
            self._events_since_sample += 1
            if self._events_since_sample >= 50:
                self._events_since_sample = 0
                self._sample_memory(event.device)

    def _projected(self, c) -> dict:
        """{profile key: (seconds, seconds as a compiled kernel)} of one recorded cost: the same
        work re-costed with each profile's hardware figures (``perf.recost``). Recorded costs
        repeat (the model caches them per op signature and per graph), so results are cached
        by the cost object (held, so that its id stays its own)."""
        hit = self._recost_cache.get(id(c))
        if hit is not None and hit[0] is c:
            return hit[1]
        out = {}
        for p in self.profiles:
            got = recost.cost_on(c, p.target)
            if got is None:  # no basis (an NKI kernel): scaled, the one approximation left
                t = self._scaled(c, p)
                out[p.key] = (t, t)
                continue
            compiled = recost.cost_on(c, p.target, as_kernel=True) if c.kind == ev.OP else got
            out[p.key] = (got.duration, compiled.duration)
        if len(self._recost_cache) > 50_000:
            self._recost_cache.clear()
        self._recost_cache[id(c)] = (c, out)
        return out

    def _scaled(self, c, p) -> float:
        """An NKI kernel's time on another profile: its compute and memory times scaled by the
        ratio of peak FLOP/s and HBM bandwidth (its instruction-level simulation ran on the
        emulated generation only)."""
        dt = c.dtype or "bf16"
        cur = self._cur_target.core
        r = (cur.tensor_peak(dt) / p.target.core.tensor_peak(dt), cur.hbm_bw / p.target.core.hbm_bw)
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


def _untraced(fn):
    return untraced(fn, reason="torch-neuronx evaluate: instrumentation")


def _produces(outputs, dtype) -> bool:
    """True when one of an op's results has ``dtype``."""
    if isinstance(outputs, torch.Tensor):
        return outputs.dtype == dtype
    return any(isinstance(o, torch.Tensor) and o.dtype == dtype for o in outputs or ())
