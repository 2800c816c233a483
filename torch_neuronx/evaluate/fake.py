"""Projection at full size without materialising the model: one training step traced with
PyTorch's FakeTensors on the ``neuron`` device.

Under :func:`fake_session` every tensor a script creates is a ``FakeTensor`` (shape, dtype and
device, no data), so an 8B-parameter model costs a few MB of host memory. A dispatch mode above
the fake mode sees every ATen op, as the driver would on a real run, and records:

- the op's :class:`~torch_neuronx.perf.Work` (the performance model's own FLOP and byte count, the
  same function the eager path uses -- so on a model small enough to run, fake and measured FLOPs
  agree exactly), re-costed on each instance profile by the model's roofline;
- the bytes alive on the device: each new device storage is counted once and released when its
  storage object dies (views share their base's storage), giving peak memory per core;
- ``.item()`` and other data-dependent reads: a fake tensor has no value, so the read returns a
  placeholder (False for a condition, 1 for a number) and the call site is reported as data dependence.

Ordinary idioms are handled: ``torch.device("neuron")`` and ``device="neuron"`` factories
(fake tensors may carry any device), ``model.to("neuron")`` and ``model.to(torch.bfloat16)``
(PyTorch's ``Module.to`` sets ``param.data``, which cannot swap a fake parameter's device or
dtype, and its swap path refuses fake parameters; the session's ``Module._apply`` replaces each
parameter with a new one instead, keeping shared parameters shared), optimizers (their ``step()`` ends the traced
step), and ``torch.compile`` (returns the function unchanged: the projection of a compiled
step models the ops as the compiled-graph planner plans them, ``compiled_step_s``).
"""

from __future__ import annotations

import collections
import contextlib
import math
import operator
import weakref

import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.weak import WeakTensorKeyDictionary

from torch_neuronx.eager.op_policy import engine_for, is_data_dependent
from torch_neuronx.perf import events as ev
from torch_neuronx.perf import overlap, roofline
from torch_neuronx.perf import report as perf_report
from torch_neuronx.perf import work as wk
from torch_neuronx.perf.collectives import collective_cost
from torch_neuronx.runtime import patches
from torch_neuronx.runtime.engines import Engine
from torch_neuronx.runtime.op_names import op_name, strip_overload

from . import advice
from .callsite import source_line, user_site
from .collector import StepLimitReached
from .fake_forwards import ForwardTracker

_SCALAR_READS = {"aten::_local_scalar_dense", "aten::item"}

#: host-side random draws up to this many elements are drawn for real (see _host_draw)
HOST_DRAW_LIMIT = 1 << 20


def _host_draw(mode, func, args, kwargs):
    """A random factory on the host (``torch.randint(n, (b,))``, ``torch.randperm(n)``) drawn
    for real, as a fake tensor that carries its value (FakeTensor's ``constant``), else None.

    Scripts index host data with such draws: nanoGPT's ``get_batch`` slices a numpy memmap at
    ``data[i:i+block_size] for i in torch.randint(...)``, a sampler shuffles with ``randperm``.
    A fake index has no value; a placeholder index gives empty or wrong slices (issue 25:
    nanoGPT's batches came out 12 x 0). Drawn for real from the CPU generator, as the script
    would draw them, FakeTensor's constant propagation gives each element's value to numpy's
    ``__index__`` and to ``.tolist()``. Device tensors and large host tensors stay fake."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily
    from torch.utils._pytree import tree_leaves

    if any(isinstance(a, torch.Tensor) for a in tree_leaves((args, kwargs))):
        return None  # an in-place draw into an existing tensor: its storage stays fake
    out = func(*args, **kwargs)  # the fake result: device and size without drawing
    if not isinstance(out, torch.Tensor) or out.device.type != "cpu":
        return None  # a device draw: recorded as the device's work
    if out.numel() > HOST_DRAW_LIMIT or out.requires_grad:
        return out
    with unset_fake_temporarily():
        real = func(*args, **kwargs)
    return mode.fake_tensor_converter.from_real_tensor(mode, real, make_constant=True)


def _close(g, nodes, alive) -> None:
    """Ends an ATen graph: its outputs are the tensors it produced that are still alive."""
    outs = [n for n, r in alive if (t := r()) is not None and nodes.get(t) is n]
    g.output(tuple(outs))


class FakeStepRecorder(TorchDispatchMode):
    """Records work and live device bytes of every ATen op on fake neuron tensors."""

    def __init__(self):
        super().__init__()
        self.works: list = []
        self.backward: set = set()  # ids of the works autograd's engine ran (advice.py)
        self.live = 0
        self.peak = 0
        self.data_dependence: collections.Counter = collections.Counter()
        self.fallbacks: collections.Counter = collections.Counter()
        self.ops = 0
        # torch.cuda.* calls mapped onto torch.neuron: (call, site) -> count
        self.cuda_calls: collections.Counter = collections.Counter()
        self.cuda_devices = None  # the MapDevice of the session (cuda device arguments)
        # top-level module calls: the step's input (samples/tokens), inference forwards
        self.forwards = ForwardTracker(self)
        self.optimized: set = set()  # ids of the parameters the stepped optimizers update
        self.fake_mode = None  # the session's FakeTensorMode (host draws become constants)
        self._muted = 0
        self._tracked: set = set()
        self.recording = True
        # set when the traced step's optimizer step ran: reads of values (logging) still run and
        # are reported; the next step's first device op ends the trace
        self.stop_at_next_step = False
        # the next step's first device op ran: the trace ends when control is back in Python
        # (_StepEnd), never by raising out of the op (see _StepEnd)
        self.stop_pending = False
        self.ended = False  # the trace has ended (raised once; the harness's own ops follow)
        # the step as ATen graphs for the compiled-graph planner: [model (forward + backward),
        # optimizer]; tensors map to the node that last produced them
        self.graphs: list = [torch.fx.Graph()]
        self._node = WeakTensorKeyDictionary()
        self._alive: list = []  # (node, weakref to its tensor) of the current graph

    def begin_optimizer(self, opt=None) -> None:
        """The optimizer's step starts: its ops form a second graph, paid once per step."""
        if opt is not None and self.recording:
            self.optimized.update(id(p) for g in opt.param_groups for p in g["params"])
        if self.recording and len(self.graphs) == 1:
            self._close_graph()
            self.graphs.append(torch.fx.Graph())

    @contextlib.contextmanager
    def muted(self):
        """Ops inside are the harness's own (a replayed forward's outputs): not recorded."""
        self._muted += 1
        try:
            yield
        finally:
            self._muted -= 1

    def _close_graph(self) -> None:
        _close(self.graphs[-1], self._node, self._alive)
        self._node = WeakTensorKeyDictionary()
        self._alive = []

    def _meta(self, t):
        from torch._subclasses.fake_tensor import unset_fake_temporarily

        with unset_fake_temporarily():
            return torch.empty(t.shape, dtype=t.dtype, device="meta")

    def _add_node(self, func, args, kwargs, out) -> None:
        from torch.utils import _pytree

        fwd = self.forwards.current  # an inference forward records into its own graph
        g, nodes, alive = (
            (fwd.graph, fwd.node, fwd.alive)
            if fwd is not None
            else (self.graphs[-1], self._node, self._alive)
        )

        def arg(a):
            if not isinstance(a, torch.Tensor):
                return a
            n = nodes.get(a)
            if n is None:
                n = g.placeholder(f"in{len(g.nodes)}")
                n.meta["val"] = self._meta(a)
                nodes[a] = n
            return n

        a2, k2 = _pytree.tree_map(arg, (tuple(args), dict(kwargs)))
        node = g.call_function(func, a2, k2)
        if isinstance(out, torch.Tensor):
            node.meta["val"] = self._meta(out)
            nodes[out], pairs = node, [(node, out)]
        elif isinstance(out, (list, tuple)):
            node.meta["val"] = tuple(
                self._meta(t) if isinstance(t, torch.Tensor) else t for t in out
            )
            pairs = []
            for i, t in enumerate(out):
                if isinstance(t, torch.Tensor):
                    gi = g.call_function(operator.getitem, (node, i))
                    gi.meta["val"] = node.meta["val"][i]
                    nodes[t] = gi
                    pairs.append((gi, t))
        else:
            node.meta["val"] = out
            pairs = []
        alive.extend((n, weakref.ref(t)) for n, t in pairs)

    def graph_plans(self) -> list:
        """The traced step's compiled-graph plans (perf/graph.py): model, then optimizer."""
        from torch_neuronx.perf import graph as perf_graph

        if self._alive or not any(n.op == "output" for n in self.graphs[-1].nodes):
            self._close_graph()
        names = ("fake step: model", "fake step: optimizer")
        return [
            perf_graph.plan_graph(torch.fx.GraphModule({}, g), names[i], engine_for)
            for i, g in enumerate(self.graphs)
            if any(n.op == "call_function" for n in g.nodes)
        ]

    def inference_plans(self, forwards: list) -> list:
        """(plan, calls) of inference forwards that belong to the step (each its own graph)."""
        from torch_neuronx.perf import graph as perf_graph

        out = []
        for f in forwards:
            if not any(n.op == "output" for n in f.graph.nodes):
                _close(f.graph, f.node, f.alive)
            if any(n.op == "call_function" for n in f.graph.nodes):
                gm = torch.fx.GraphModule({}, f.graph)
                out.append(
                    (
                        perf_graph.plan_graph(gm, f"fake step: {f.name} (no grad)", engine_for),
                        f.calls,
                    )
                )
        return out

    def end_step(self) -> None:
        self.recording = False
        self.stop_at_next_step = True

    def _release(self, key, nbytes):
        self._tracked.discard(key)
        self.live -= nbytes

    def _track(self, t: torch.Tensor) -> None:
        if t.device.type != "neuron":
            return
        st = t.untyped_storage()
        key = id(st)
        if key in self._tracked:
            return
        n = st.nbytes()
        self._tracked.add(key)
        self.live += n
        self.peak = max(self.peak, self.live)
        weakref.finalize(st, self._release, key, n)

    def reset_peak(self):
        self.peak = self.live

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self._muted:
            return func(*args, **kwargs)
        full = op_name(func)  # the driver's name: "aten::mm", "aten::add.Tensor"
        name = strip_overload(full)
        if torch.Tag.nondeterministic_seeded in func.tags and self.fake_mode is not None:
            drawn = _host_draw(self.fake_mode, func, args, kwargs)
            if drawn is not None:
                return drawn  # on the host: no device work
        if func is torch.ops.aten._pin_memory.default:  # FakeTensor has no rule: a host copy
            return torch.ops.aten.clone.default(args[0])  # (pinning changes no shape or value)
        if name in _SCALAR_READS:
            t = args[0]
            if t.device.type != "neuron":  # e.g. an optimizer's step count on the host: the fake
                try:  # mode knows constants; anything else gets the placeholder
                    return func(*args, **kwargs)
                except Exception:
                    pass
            elif (fwd := self.forwards.read_of(t)) is not None:
                fwd.reads[user_site(3)] += 1  # an evaluation's loss.item(): not the step's
            else:
                self.data_dependence[user_site(3)] += 1
            # placeholder: False for a condition (the usual path: "no NaN found"), 1 for a number
            # (a count or step; 0 would divide by zero in e.g. Adam's bias correction)
            return False if t.dtype == torch.bool else (1 if not t.is_floating_point() else 1.0)
        if (
            self.stop_at_next_step
            and not self.ended
            and not perf_report._is_view_op(full)
            # list arguments count: a fused/foreach optimizer op can be the next step's first
            and any(t.device.type == "neuron" for t in wk.tensors_in(args))
        ):
            self.stop_pending = True  # the next step's first device op: one step traced
        out = func(*args, **kwargs)
        flat = wk.tensors_in(out if isinstance(out, (list, tuple)) else (out,))
        # arguments in lists count too: foreach and fused optimizer ops (`_foreach_add_`,
        # `_fused_adamw_`) take lists of tensors and return nothing
        on_neuron = any(t.device.type == "neuron" for t in flat) or any(
            t.device.type == "neuron" for t in wk.tensors_in(args)
        )
        for t in flat:
            self._track(t)
        if (
            not (self.recording and on_neuron) or func.namespace != "aten"
        ):  # prim::device etc.: no work
            return out
        host_copy = name in ("aten::_to_copy", "aten::copy_", "aten::_copy_from") and any(
            isinstance(a, torch.Tensor) and a.device.type != "neuron" for a in args
        )
        # an op on an inference forward's outputs outside it (an evaluation's metric) is that
        # forward's, not the step's: counted once per run, not per replayed call
        after = None if self.forwards.current is not None else self.forwards.derived(args, out)
        if not host_copy and after is None:  # a copy from the host is an input of the graph
            try:
                self._add_node(func, args, kwargs, out)
            except Exception:  # noqa: BLE001 - the graph is a model; the eager count stands
                pass
        self.ops += 1
        fwd = self.forwards.current
        if fwd is not None:
            fwd.ops += 1
        if is_data_dependent(name):
            (after.reads if after is not None else self.data_dependence)[user_site(3)] += 1
        eng = engine_for(full)
        if eng == Engine.host:
            self.fallbacks[full] += 1
            return out
        # a copy from the host is the step's input (not device work); a copy on the device (an
        # autocast dtype cast, an in-place copy_) is a DMA kernel in eager as in the compiled
        # plan, which costs the same node: leaving it out made eager look faster than compiled
        if host_copy or perf_report._is_view_op(full):
            return out
        try:
            work = wk.op_work(full, tuple(args), kwargs, out, eng, kind=ev.OP)
            dest = fwd.works if fwd is not None else after.after if after is not None else None
            (self.works if dest is None else dest).append(work)
            if torch._C._current_graph_task_id() != -1:
                self.backward.add(id(work))
        except Exception:  # an op the model cannot describe: counted as an op, no work
            pass
        return out


@contextlib.contextmanager
def fake_session():
    """Everything a script creates inside is fake; yields the :class:`FakeStepRecorder`."""

    def _compile(model=None, **kw):  # returns the model unchanged (see the module doc)
        if model is None:
            return lambda m: m
        return model

    rec = FakeStepRecorder()
    depth = [0]
    step_end = _StepEnd(rec)
    memo: dict = {}

    def _apply(module, fn, recurse=True):
        # PyTorch's own _apply swaps a fake parameter in place (torch.utils.swap_tensors), which
        # fails; this one replaces each parameter with a new one (shared parameters stay
        # shared through ``memo``), then starts the step's peak once the model is in place
        depth[0] += 1
        try:
            if recurse:
                for child in module.children():
                    child._apply(fn)
            for key, param in module._parameters.items():
                if param is None:
                    continue
                if id(param) not in memo:
                    with torch.no_grad():
                        applied = fn(param)
                    new = (
                        param
                        if applied is param
                        else torch.nn.Parameter(applied, param.requires_grad)
                    )
                    if new is not param and param.grad is not None:
                        with torch.no_grad():
                            new.grad = fn(param.grad)
                    memo[id(param)] = (param, new)
                module._parameters[key] = memo[id(param)][1]
            for key, buf in module._buffers.items():
                if buf is not None:
                    module._buffers[key] = fn(buf)
            return module
        finally:
            depth[0] -= 1
            if depth[0] == 0:
                memo.clear()
                rec.reset_peak()

    from torch._subclasses.fake_tensor import FakeTensor

    from .device_map import MapDevice

    def _format(t, spec):  # Tensor.__format__ formats a 0-dim Tensor's item(), not a FakeTensor's
        if t.dim() == 0:
            return format(t.item(), spec)  # the placeholder; reported as data dependence
        return object.__format__(t, spec) if not spec else format(repr(t), spec)

    cuda = MapDevice("neuron", source="cuda")
    cuda.record_sites = True
    rec.cuda_devices = cuda

    real_call = torch.nn.Module.__call__

    def _call(module, *args, **kwargs):  # top-level calls: the step's input, inference forwards
        return rec.forwards.call(real_call, module, *args, **kwargs)

    with contextlib.ExitStack() as stack:
        for name in CUDA_MAPPED:
            if hasattr(torch.cuda, name) and hasattr(torch.neuron, name):
                stack.enter_context(
                    patches.scoped(
                        torch.cuda,
                        name,
                        _cuda_call(rec, name),
                        reason="torch_neuronx.evaluate --fake: the script's torch.cuda calls "
                        "act on the neuron device (and are reported with the fix)",
                    )
                )
        stack.enter_context(
            patches.scoped(
                torch.amp.autocast_mode.autocast,
                "__init__",
                _autocast_init(rec, torch.amp.autocast_mode.autocast.__init__),
                reason="torch_neuronx.evaluate --fake: autocast('cuda') regions act on neuron",
            )
        )
        stack.enter_context(
            patches.scoped(
                FakeTensor,
                "__format__",
                _format,
                reason="torch_neuronx.evaluate --fake: f-strings of a fake scalar format its "
                "placeholder value, as Tensor.__format__ formats item()",
            )
        )
        stack.enter_context(
            patches.scoped(
                torch.nn.Module,
                "__call__",
                _call,
                reason="torch_neuronx.evaluate --fake: sorts top-level module calls into the "
                "step's forwards and inference forwards (evaluate/fake_forwards.py)",
            )
        )
        stack.enter_context(step_end)
        stack.enter_context(cuda)
        stack.enter_context(_session(rec, _compile, _apply))
        yield rec


class _StepEnd(TorchFunctionMode):
    """Ends the trace (``StepLimitReached``) when a torch function that ran the next step's
    first device op returns. Raising from inside the op (the dispatch mode) can cross C++ code
    that cannot pass a Python exception on: timm's ResNet-50 aborted the process (SIGABRT,
    "terminate called after throwing an instance of 'python_error'", no report) when the
    trace ended inside its first convolution."""

    def __init__(self, rec):
        super().__init__()
        self.rec = rec

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if self.rec.stop_pending and not self.rec.ended:
            self.rec.ended = True
            raise StepLimitReached(1)
        return out


#: torch.cuda functions that --fake runs as their torch.neuron namesakes (a GPU script's calls)
CUDA_MAPPED = (
    "synchronize",
    "is_available",
    "is_bf16_supported",
    "device_count",
    "current_device",
    "set_device",
    "get_device_name",
    "manual_seed",
    "manual_seed_all",
    "empty_cache",
    "memory_allocated",
    "max_memory_allocated",
    "reset_peak_memory_stats",
)


def _cuda_call(rec, name):
    import sys

    from .callsite import is_user

    real = getattr(torch.cuda, name)

    def call(*a, **k):  # the script's own calls; PyTorch's internal ones keep the real answer
        if not is_user(sys._getframe(1).f_code.co_filename):
            return real(*a, **k)
        rec.cuda_calls[(f"torch.cuda.{name}", user_site(2))] += 1
        cuda = rec.cuda_devices  # torch.cuda.synchronize(device="cuda:0") names the device
        if cuda is not None:
            a = tuple(cuda._map(v) for v in a)
            k = {key: cuda._map(v) for key, v in k.items()}
        return getattr(torch.neuron, name)(*a, **k)

    return call


def _autocast_init(rec, real):
    def __init__(self, device_type, *a, **k):
        if device_type == "cuda":
            rec.cuda_calls[("torch.autocast('cuda')", user_site(2))] += 1
            device_type = "neuron"
        return real(self, device_type, *a, **k)

    return __init__


@contextlib.contextmanager
def _session(rec, _compile, _apply):
    from torch.optim.optimizer import register_optimizer_step_pre_hook

    with (
        patches.scoped(
            torch,
            "compile",
            _compile,
            reason="torch_neuronx.evaluate --fake: the traced step runs eager on fake tensors",
        ),
        patches.scoped(
            torch.nn.Module,
            "_apply",
            _apply,
            reason="torch_neuronx.evaluate --fake: moves a module's fake parameters by "
            "replacing them (PyTorch swaps them in place, which fake tensors refuse)",
        ),
        FakeTensorMode(allow_non_fake_inputs=True) as mode,
        rec,
    ):
        rec.fake_mode = mode
        hook = register_optimizer_step_pre_hook(lambda opt, a, k: rec.begin_optimizer(opt))
        try:
            yield rec
        finally:
            hook.remove()


def project(
    rec: FakeStepRecorder,
    profiles: list,
    *,
    dp: int = 1,
    tp: int = 1,
    static: dict | None = None,
    work: dict | None = None,
) -> dict:
    """FLOPs, bytes, peak memory per core and modeled step time per profile for a layout of
    ``dp`` (FSDP shards) x ``tp`` (tensor-parallel) cores. An estimate; see ``assumptions``."""
    from .build import projection_row

    inside, outside = rec.forwards.split(rec.optimized)
    works = list(rec.works) + [w for f in inside for w in [*(f.works * f.calls), *f.after]]
    flops = sum(w.flops for w in works)
    nbytes = sum(w.bytes for w in works)
    backward = [id(w) in rec.backward for w in works]
    step_ops = (
        rec.ops - sum(f.ops for f in rec.forwards.inference) + sum(f.ops * f.calls for f in inside)
    )
    static = static or {}
    pgo = sum(static.get(k, 0) for k in ("parameters", "gradients", "optimizer_state"))
    activations = max(rec.peak - pgo, 0)
    per_core_mem = pgo / (dp * tp) + activations / tp
    param_bytes = static.get("parameters", 0)
    rows = []
    try:  # (plan, times per step): the step's graphs once, no-grad forwards as often as run
        plans = [(pl, 1) for pl in rec.graph_plans()] + rec.inference_plans(inside)
    except Exception:  # noqa: BLE001 - no plan: the ops are costed as unfused kernels
        plans = []
    # micro-batch mode: gradient accumulation runs the model n times per optimizer step; the
    # optimizer's graph and the per-step work are paid once (perf/overlap.accumulated_step)
    micro = max(int((inferred_work(rec) or {}).get("calls") or 1), 1)
    once = [pl for pl, _ in plans if pl.name == "fake step: optimizer"]
    for p in profiles:
        costs = [roofline.cost_of(w, p.target.core, in_graph=False) for w in works]
        t_eager = sum(c.duration for c in costs) / tp
        if plans:  # the compiled-graph planner (perf/graph.py), the optimizer's graph once
            t_graph = sum(pl.duration(p.target.core) * n for pl, n in plans) / tp
        else:
            t_graph = (
                sum(
                    roofline.cost_of(_as_kernel(w), p.target.core, in_graph=True).duration
                    for w in works
                )
                / tp
            )
        world = dp * tp
        # FSDP: all-gather parameters (forward and backward), reduce-scatter gradients; issued
        # per unit and prefetched, so they overlap the compute (perf/overlap.py's rule: all but
        # the last hidden). TP: two all-reduces of the activations per layer, forward and
        # backward (approximated), needed at once by the next op: blocking.
        fsdp: list = []
        tp_comm = 0.0
        if dp > 1:
            ranks = list(range(0, world, tp))[:dp]
            shard = param_bytes / tp
            ag = collective_cost("all_gather", shard, ranks, p.target).duration
            fsdp = [ag, ag, collective_cost("reduce_scatter", shard, ranks, p.target).duration]
        if tp > 1:
            tp_comm = (
                4
                * collective_cost(
                    "all_reduce", max(activations / tp / 64, 1), list(range(tp)), p.target
                ).duration
            )
        comm = sum(fsdp) + tp_comm
        # per micro-batch: its share of the traced compute with its own FSDP / TP collectives
        # (FSDP gathers the parameters in every micro-batch's forward and backward)
        t_once = sum(pl.duration(p.target.core) for pl in once) / tp if plans else 0.0
        eager_s = overlap.accumulated_step(
            overlap.step_time(t_eager / micro, blocking_s=tp_comm, overlapped_s=fsdp), micro
        )
        graph_s = overlap.accumulated_step(
            overlap.step_time((t_graph - t_once) / micro, blocking_s=tp_comm, overlapped_s=fsdp),
            micro,
            once_s=t_once,
        )
        # each of the dp replicas runs the traced micro-batch; tp cores share one replica's work
        row = projection_row(
            p,
            eager_s,
            flops / tp,
            work,
            compiled_s=graph_s,
            ranks=dp,
            cores_per_replica=tp,
        )
        row["flops_per_core"] = flops / tp
        row["comm_s"] = comm * micro  # every micro-batch's collectives (per step)
        row["exposed_comm_s"] = graph_s - t_graph  # compiled step: TP + exposed FSDP
        row["micro_batches"] = micro
        row["fits"] = per_core_mem <= p.hbm_per_core
        row["cores_needed"] = world
        row["instances_needed"] = math.ceil(world / p.cores)
        row["advice"] = advice.from_costs(
            costs, p.target.core, eager_s, graph_s, p.key, 1 / tp, backward
        )
        rows.append(row)
    from .build import recommendation

    return {
        "projection": True,
        "fake": True,
        "recommendation": recommendation(rows, work),
        # what bounds the step and the lever, on the profile with the shortest modeled step
        "advice": min(rows, key=lambda r: r["step_s"] or math.inf)["advice"] if rows else [],
        "flops_per_step": flops,
        "bytes_per_step": nbytes,
        "ops": step_ops,
        "evaluation_outside_step": _evaluation(outside),
        "peak_memory_single_core": rec.peak,
        "layout": {
            "fsdp_degree": dp,
            "tensor_parallel_degree": tp,
            "memory_per_core_estimate": per_core_mem,
            "parameters_gradients_optimizer_bytes": pgo,
            "activations_bytes": activations,
        },
        "profiles": rows,
        "data_dependence": _sites(
            rec.data_dependence + sum((f.reads for f in inside), collections.Counter())
        ),
        "fallback_ops": dict(rec.fallbacks),
        "cuda_calls": cuda_report(rec),
        "inputs": inferred_work(rec),
        "assumptions": [
            "One training step traced with fake tensors; no value was computed (reads of device values return a placeholder: False or 1).",
            "Modeled time per profile: eager = every op costed as an eager launch; compiled_step_s = the traced "
            "step planned by the compiled-graph planner (perf/graph.py, the same plan torch.compile's graphs get): "
            "forward + backward as one graph, the optimizer's step as a second graph, paid once per step; under gradient accumulation "
            "each micro-batch pays its own collectives (perf/overlap.accumulated_step). Divided by the tensor-parallel degree; FSDP adds an all-gather of the "
            "parameters (forward and backward) and a reduce-scatter of the gradients; tensor parallelism adds an "
            "approximate all-reduce cost, blocking. The FSDP collectives overlap the compute, all but the last "
            "(torch_neuronx.perf.overlap, docs/perf-model.md 'Overlap').",
            "Memory per core = (parameters + gradients + optimizer state) / (FSDP x TP) + activations / TP (an "
            "estimate; the single-core peak is measured on the fake run).",
        ],
    }


def _as_kernel(w):
    import dataclasses

    return dataclasses.replace(w, kind=ev.KERNEL)


def static_bytes(params, optimizers=()) -> dict:
    """Bytes of parameters, gradients (as many as trainable parameters) and optimizer state."""
    seen = set()
    p_bytes = g_bytes = count = 0
    for p in params:
        if id(p) in seen:
            continue
        seen.add(id(p))
        count += p.numel()
        n = p.numel() * p.element_size()
        p_bytes += n
        if p.requires_grad:
            g_bytes += n
    o_bytes = 0
    for opt in optimizers:
        for st in opt.state.values():
            for v in st.values():
                if isinstance(v, torch.Tensor) and v.device.type != "cpu":
                    o_bytes += v.numel() * v.element_size()
    return {
        "parameters": p_bytes,
        "gradients": g_bytes,
        "optimizer_state": o_bytes,
        "parameter_count": count,
    }


def cuda_report(rec) -> list:
    """The script's CUDA idioms, each run on neuron under --fake, with the call site and the fix."""
    rows = [
        {
            "call": call,
            "site": site,
            "count": n,
            "line": source_line(site),
            "fix": "torch.autocast('neuron', ...)"
            if call.startswith("torch.autocast")
            else call.replace("torch.cuda.", "torch.neuron."),
        }
        for (call, site), n in rec.cuda_calls.items()
    ]
    cuda = rec.cuda_devices
    if cuda is not None and cuda.sites:
        for site, n in collections.Counter(cuda.sites).items():
            rows.append(
                {
                    "call": "device 'cuda'",
                    "site": site,
                    "count": n,
                    "line": source_line(site),
                    "fix": "device='neuron' (or .to('neuron'))",
                }
            )
    return rows


def inferred_work(rec) -> dict | None:
    """Samples (and tokens, for integer ids) per step from the tensors the traced step passed to
    its model (every micro-batch of a gradient accumulation), as the API infers them from its
    inputs (evaluate/fake_forwards.py)."""
    return rec.forwards.inputs()


def _sites(counter) -> list:
    return [{"site": s, "count": n, "line": source_line(s)} for s, n in counter.items()]


def _evaluation(outside: list) -> dict | None:
    """The inference forwards of the trained model before its step (an evaluation loop), left
    out of the step: what they were, how often they ran and their work per call."""
    if not outside:
        return None
    return {
        "note": "forward passes of the trained model with autograd off and the model in eval "
        "mode (an evaluation): not part of the training step, not in its FLOPs or time",
        "forwards": [
            {
                "module": f.name,
                "site": f.site,
                "calls": f.calls,
                "flops_per_call": sum(w.flops for w in f.works),
                "ops_per_call": f.ops,
                "host_reads": _sites(f.reads),
            }
            for f in outside
        ],
    }
