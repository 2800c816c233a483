"""``torch.compile(backend="neuron")``.

Pipeline, per Dynamo graph (see docs/compile.md)::

    Dynamo FX graph (fake neuron tensors)
      -> AOTAutograd (joint graph, neuron decomposition table, min-cut partition into
         separate forward and backward graphs; the backward is compiled eagerly)
      -> legality pass (every ATen op must be native under the eager op policy)
      -> lowering: device rewrite neuron -> host (the emulated core's memory *is* host RAM)
      -> Inductor CPU code generation (persistent cache under TORCH_NEURONX_NEFF_CACHE_DIR;
         a warm process gets the whole partitioned result from PyTorch's AOTAutogradCache
         and skips every step above but Dynamo's)
      -> executable: neuron inputs are viewed as host tensors (``host_alias``, no copy), the
         kernels run inside ``device_allocations`` so every buffer they allocate is device
         memory, and outputs are ``adopt``-ed back as neuron tensors (no copy).

AOTAutograd's runtime wrappers (autograd.Function, input mutations, output aliasing) run on
the neuron tensors themselves, so mutation and aliasing behave as in eager.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.fx
from torch._subclasses.fake_tensor import FakeTensor

from torch_neuronx.runtime.host import host_alias

from . import (
    aot_cache,
    artifacts,
    cache,
    config,
    dynamo_dirs,
    dynamo_metrics,
    host_graphs,
    inputs,
    legality,
    perf_plan,
    random_inputs,
)
from .decompositions import neuron_decompositions
from .executable import _DeviceExecutable, _loading
from .legality import NeuronCompileError

log = logging.getLogger("torch_neuronx.compile")

# Dynamo's own caches read before this backend runs (profile-guided state, precompiled
# packages; pickles) come from checked private directories when it compiles for neuron
dynamo_dirs.install()

__all__ = ["neuron_backend", "NeuronCompileError"]


class _RunEagerly(Exception):
    """Raised inside AOTAutograd when fallback execution was chosen for an illegal graph."""

    def __init__(self, illegal):
        super().__init__("fallback execution")
        self.illegal = illegal


_graph_counter_lock = threading.Lock()
_graph_counter = [0]


def _next_graph_number() -> int:
    with _graph_counter_lock:
        _graph_counter[0] += 1
        return _graph_counter[0]


def _function_id(gm: torch.fx.GraphModule) -> str:
    """``name (file) [frame N]`` of the Python function Dynamo is compiling; graphs of
    the same function (recompiles, new shapes) share it."""
    try:
        cid = gm.meta.get("dynamo_compile_id") or torch._guards.CompileContext.current_compile_id()
        frame = getattr(cid, "frame_id", "?")
        code = _code_being_compiled()
        if code is not None:
            return f"{code.co_name} ({os.path.basename(code.co_filename)}:{code.co_firstlineno}) [frame {frame}]"
        return f"[frame {frame}]"
    except Exception:  # pragma: no cover - best effort
        return "<unknown>"


def _code_being_compiled():
    """The user code object Dynamo is compiling (found on Dynamo's own stack frames)."""
    import inspect
    import types

    f = inspect.currentframe()
    try:
        while f is not None:
            if f.f_code.co_name in ("_compile", "compile_inner", "_compile_inner"):
                code = f.f_locals.get("code")
                if isinstance(code, types.CodeType):
                    return code
            f = f.f_back
    finally:
        del f
    return None


def _is_neuron_tensor(x) -> bool:
    return isinstance(x, torch.Tensor) and x.device.type == "neuron"


def _is_symbolic(x) -> bool:
    if isinstance(x, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return True
    if isinstance(x, torch.Tensor):
        return (
            any(isinstance(s, torch.SymInt) for s in x.shape)
            or any(isinstance(s, torch.SymInt) for s in x.stride())
            or isinstance(x.storage_offset(), torch.SymInt)
        )
    return False


def _shape_of(x):
    if isinstance(x, torch.Tensor):
        return tuple(int(s) for s in x.shape)
    return x


def _input_sources(gm: torch.fx.GraphModule) -> list[str | None]:
    """Dynamo's source name (``L['x']``, a parameter, ...) of each graph input. Read while
    Dynamo is calling the backend: it drops the placeholders' ``grapharg`` afterwards."""
    names = []
    for n in gm.graph.nodes:
        if n.op == "placeholder":
            src = getattr(n.meta.get("grapharg"), "source", None)
            names.append(src.name if src is not None else None)
    return names


def _shape_signature(sources: list[str | None], example_inputs) -> tuple:
    """The input shapes of one static graph, named by Dynamo's input sources rather than by
    position: a symbolic graph has extra size inputs and may order its placeholders
    differently than the static graph compiled for the same shapes, and both must count as
    one shape of the function."""
    sig = []
    for i, x in enumerate(example_inputs):
        if not isinstance(x, torch.Tensor):
            continue
        source = sources[i] if i < len(sources) else None
        sig.append((source or f"#{i}", tuple(int(s) for s in x.shape), str(x.dtype)))
    return tuple(sorted(sig))


# --------------------------------------------------------------------------- options


class _Options:
    def __init__(self, mode, options: dict | None, extra_kwargs: dict):
        options = dict(options or {})
        if extra_kwargs:
            log.warning("neuron backend: ignoring unsupported arguments %s", sorted(extra_kwargs))
        if mode not in (None, "default"):
            msg = f"Neuron backend does not support mode='{mode}', falling back to default mode."
            log.warning(msg)
        if options.pop("dynamic", False):
            raise NeuronCompileError(
                "torch.compile(backend='neuron') does not support dynamic shapes "
                "(options={'dynamic': True}); shapes are static and each new input shape "
                "compiles a new graph. Leave dynamic unset or pass dynamic=False."
            )
        fallback = options.pop("fallback_execution", None)
        if fallback is None:
            fallback = not config.disable_fallback_execution()
        self.fallback_execution = bool(fallback)
        self.model_name = str(options.pop("model_name", "model_default"))
        if options:
            log.warning(
                "neuron backend: ignoring unknown options %s (known: %s)",
                sorted(options),
                ", ".join(config.KNOWN_OPTIONS),
            )

    def cache_tag(self) -> str:
        # options that change generated code go into the persistent cache key
        return "neuron-default"


def _reject_dynamic() -> None:
    if not torch._dynamo.config.assume_static_by_default:
        raise NeuronCompileError(
            "torch.compile(backend='neuron') does not support dynamic=True: shapes are "
            "static on Neuron and every new input shape compiles a new graph. Leave "
            "`dynamic` unset or pass dynamic=False; pad or bucket inputs to bound the "
            "number of distinct shapes."
        )


# --------------------------------------------------------------------------- entry point


def neuron_backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], **kwargs):
    """Dynamo backend ``neuron`` (entry point group ``torch_dynamo_backends``)."""
    mode = kwargs.pop("mode", None)
    options = kwargs.pop("options", None)
    function = _function_id(gm)
    try:
        _reject_dynamic()
        opts = _Options(mode, options, kwargs)
        if any(isinstance(x, (list, tuple, dict)) for x in example_inputs):
            from torch._dynamo.utils import flatten_graph_inputs

            return flatten_graph_inputs(
                gm,
                example_inputs,
                functools.partial(_compile_dynamo_graph, opts=opts, function=function),
            )
        return _compile_dynamo_graph(gm, example_inputs, opts=opts, function=function)
    except Exception as e:  # recorded even when the script swallows it (evaluate reports it)
        stack = [(f.filename, f.lineno, f.name) for f in traceback.extract_stack()[:-1]]
        dynamo_metrics.record_failure(function, e, stack)
        raise


def _compile_dynamo_graph(gm, example_inputs, *, opts: _Options, function: str):
    example_inputs = list(example_inputs)
    if host_graphs.is_host_graph(gm, example_inputs, _input_sources(gm)):
        return gm.forward  # index arithmetic a model does on CPU on purpose (host_graphs.py)
    placement = _InputPlacement(gm, example_inputs)
    if any(_is_symbolic(x) for x in example_inputs):
        # Dynamo's automatic dynamic shapes (dynamic=None) or mark_dynamic produced a
        # symbolic graph; Neuron shapes are static, so specialise per concrete shape.
        spec = _ShapeSpecializingFunction(gm, example_inputs, opts, function, placement)
        return torch._dynamo.disable(placement.wrap(spec), reason="neuron compiled graph")
    return _compile_static(
        gm, placement.device_inputs(example_inputs), opts, function, placement, _input_sources(gm)
    )


# --------------------------------------------------------------------------- CPU autocopy


def _describe_input(gm: torch.fx.GraphModule, i: int):
    """(argument position, what names it) of graph input ``i``, for the autocopy error: the
    user function's parameter when Dynamo's source is one, and Dynamo's source name."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if i >= len(placeholders):
        return i, None
    src = getattr(placeholders[i].meta.get("grapharg"), "source", None)
    source = src.name if src is not None else placeholders[i].name
    local = getattr(src, "local_name", None)
    code = _code_being_compiled()
    if local is not None and code is not None:
        names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
        if local in names:
            return names.index(local), f"argument '{local}', {source}"
    return i, source


class _InputPlacement:
    """CPU tensors that reach the backend as the inputs of a graph of CPU tensors only (a
    module left on CPU, whose graphs hold its CPU parameters) are copied to neuron at every
    call, with in-place updates written back (outputs are neuron), unless
    TORCH_NEURONX_DYNAMO_DISABLE_CPU_AUTOCOPY=1, which makes them an error (inputs.py). CPU
    inputs of a graph that also holds neuron tensors stay on CPU (Dynamo traced them there),
    and a graph of host index arithmetic runs on CPU (host_graphs.py)."""

    def __init__(self, gm: torch.fx.GraphModule, example_inputs: list[Any]):
        neuron_inputs = [x for x in example_inputs if _is_neuron_tensor(x)]
        self.device = (
            neuron_inputs[0].device
            if neuron_inputs
            else torch.device("neuron", torch.neuron.current_device())
        )
        # a graph that also holds neuron tensors was traced by Dynamo with its CPU inputs on
        # CPU, so each is used where CPU ops (or CPU scalars) may be: it keeps them there, as
        # eager does (index arithmetic a model does on CPU stays CPU); only a graph of CPU
        # tensors alone (a module left on CPU) is the program moved to neuron
        self.cpu_positions: list[int] = (
            []
            if neuron_inputs
            else [
                i
                for i, x in enumerate(example_inputs)
                if isinstance(x, torch.Tensor) and x.device.type == "cpu"
            ]
        )
        if self.cpu_positions and inputs.autocopy_disabled():
            position = self.cpu_positions[0]
            raise inputs.autocopy_error(*_describe_input(gm, position), self.device)

    @classmethod
    def all_on_device(cls, device) -> _InputPlacement:
        """The placement of a graph whose inputs are all on ``device`` already."""
        placement = cls.__new__(cls)
        placement.device = device
        placement.cpu_positions = []
        return placement

    def device_inputs(self, example_inputs: list[Any]) -> list[Any]:
        if not self.cpu_positions:
            return example_inputs
        out = list(example_inputs)
        for i in self.cpu_positions:
            x = out[i]
            mode = x.fake_mode if isinstance(x, FakeTensor) else None
            ctx = mode if mode is not None else contextlib.nullcontext()
            with ctx:
                y = torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device=self.device)
            if x.requires_grad:
                y.requires_grad_(True)
            out[i] = y
        return out

    def wrap(self, fn: Callable) -> Callable:
        if not self.cpu_positions:
            return fn
        positions = tuple(self.cpu_positions)
        device = self.device

        def run_with_autocopy(*args):
            args = list(args)
            copies: list = []
            for i in positions:
                if isinstance(args[i], torch.Tensor) and args[i].device.type == "cpu":
                    args[i] = inputs.copy_to(args[i], device, copies)
            out = fn(*args)
            inputs.write_back(copies)  # in-place updates of a CPU input
            return out

        return run_with_autocopy


# --------------------------------------------------------------------------- per-graph state


class _GraphCompile:
    """State for compiling one Dynamo graph with static shapes."""

    def __init__(self, gm, example_inputs, opts: _Options, function: str, device, sources):
        self.gm = gm
        self.example_inputs = example_inputs
        self.opts = opts
        self.function = function
        self.device = device
        self.graph_index, self.new_shape = dynamo_metrics._next_graph_index(
            function, _shape_signature(sources, example_inputs)
        )
        self.name = f"{opts.model_name}_{_next_graph_number()}"
        self.dir = artifacts.graph_dir(self.name)
        self.lowering_s = 0.0
        self.codegen_s = 0.0
        self.cache_results: list[str] = []
        self.session: cache.GraphSession | None = None
        self.fw_nodes: int | None = None
        self.bw_nodes: int | None = None
        # ops eager runs by CPU fallback that this graph compiles as their decomposition
        self.through_decomposition: set[str] = set()
        self.num_dynamo_outputs = len(
            torch.utils._pytree.arg_tree_leaves(*next(iter(reversed(gm.graph.nodes))).args)
        )

    # ---- legality
    def check_legality(self, aten_gm: torch.fx.GraphModule) -> None:
        t0 = time.perf_counter()
        try:
            result = legality.check_graph(aten_gm)
        finally:
            self.lowering_s += time.perf_counter() - t0
        illegal = result.illegal
        self.through_decomposition.update(result.through_decomposition)
        if not illegal:
            return
        if self.opts.fallback_execution:
            raise _RunEagerly(illegal)
        raise legality.NonNativeOpsError(
            legality.format_error(self.name, illegal), [item.op for item in illegal]
        )

    def partition(self, joint_gm, joint_inputs, **kwargs):
        self.check_legality(joint_gm)
        artifacts.dump_graph(self.dir, "aot_joint.txt", joint_gm)
        from torch._inductor.compile_fx import partition_fn as inductor_partition
        from torch._inductor.virtualized import V

        # Inductor's joint-graph passes (run by its partitioner) read V.fake_mode, e.g.
        # fuse_seed_creation_pass for dropout's random ops; Inductor's compile_fx runs
        # AOTAutograd inside V.set_fake_mode, and so must we
        fake_mode = torch._guards.detect_fake_mode(joint_inputs)
        with V.set_fake_mode(fake_mode) if fake_mode is not None else contextlib.nullcontext():
            return inductor_partition(joint_gm, joint_inputs, **kwargs)

    # ---- compilers handed to AOTAutograd
    def forward_compiler(self, aten_gm, example_inputs):
        return self._compile(aten_gm, example_inputs, "forward")

    def backward_compiler(self, aten_gm, example_inputs):
        return self._compile(aten_gm, example_inputs, "backward")

    def inference_compiler(self, aten_gm, example_inputs):
        self.check_legality(aten_gm)
        return self._compile(aten_gm, example_inputs, "inference")

    def _compile(self, aten_gm: torch.fx.GraphModule, example_inputs, kind: str):
        from torch._inductor.compile_fx import compile_fx_inner
        from torch._inductor.virtualized import V

        t0 = time.perf_counter()
        n_nodes = len(aten_gm.graph.nodes)
        if kind == "backward":
            self.bw_nodes = n_nodes
        else:
            self.fw_nodes = n_nodes
        artifacts.dump_graph(self.dir, f"aot_{kind}.txt", aten_gm)

        if kind == "inference":
            aten_gm = _replace_random_ops(aten_gm, example_inputs)
        # random numbers: drawn on the device by the executable (random_inputs.py)
        example_inputs, draws = random_inputs.random_as_inputs(aten_gm, list(example_inputs))
        inductor_kwargs = self._inductor_kwargs(aten_gm, example_inputs, kind)
        lowered = _lower_to_host(aten_gm, example_inputs)
        self.lowering_s += time.perf_counter() - t0

        t1 = time.perf_counter()
        store = cache.PersistentCache.current()
        key = store.graph_key(
            lowered.gm, lowered.host_inputs, kind, inductor_kwargs, self.opts.cache_tag()
        )
        with V.set_fake_mode(lowered.fake_mode):
            compiled, status = store.compile(
                key,
                lambda: compile_fx_inner(lowered.gm, lowered.host_inputs, **inductor_kwargs),
            )
        self.codegen_s += time.perf_counter() - t1
        self.cache_results.append(status)
        if self.session is not None:
            self.session.compiled.append(compiled)
        source = getattr(compiled, "source_code", None)
        if source:
            artifacts.dump_text(self.dir, f"{kind}_code.py", source)
        device_outputs = lowered.device_outputs
        if kind == "forward":
            # Activations saved for the backward graph (the outputs after num_forward) are
            # consumed only by our backward executable: keep them as host views of device
            # memory (they were allocated from the device pool) instead of adopting them
            # here and aliasing them back there.
            tc = torch._guards.TracingContext.try_get()
            meta = getattr(tc, "fw_metadata", None) if tc is not None else None
            num_forward = getattr(meta, "num_forward", None)
            if isinstance(num_forward, int):
                device_outputs = tuple(i for i in device_outputs if i < num_forward)
        exe = _DeviceExecutable(
            compiled,
            self.device,
            lowered.device_inputs,
            device_outputs,
            kind,
            n_nodes,
            perf_plan.plan(aten_gm, f"{self.name}/{kind}"),
            draws,
        )
        # kept with the executable so that an AOT-cache hit (no legality pass) reports it too
        exe.through_decomposition = tuple(sorted(self.through_decomposition))
        exe.unsafe_to_save = aot_cache.unsafe_to_save()
        if exe.unsafe_to_save and self.session is not None:
            self.session.unsaved = exe.unsafe_to_save
        return exe

    def loaded_from_cache(self, exe: _DeviceExecutable, seconds: float) -> None:
        """An executable came back from the AOT-level cache (no tracing, no codegen)."""
        if exe.kind == "backward":
            self.bw_nodes = exe.n_nodes
        else:
            self.fw_nodes = exe.n_nodes
        self.codegen_s += seconds
        self.cache_results.append("hit")
        self.through_decomposition.update(exe.__dict__.get("through_decomposition", ()))
        if exe.source_code:
            artifacts.dump_text(self.dir, f"{exe.kind}_code.py", exe.source_code)

    def _inductor_kwargs(self, aten_gm, example_inputs, kind) -> dict[str, Any]:
        from torch._inductor import config as inductor_config

        out_node = next(iter(reversed(aten_gm.graph.nodes)))
        outputs = torch.utils._pytree.arg_tree_leaves(*out_node.args)
        if kind == "backward":
            visible = (
                [i for i, n in enumerate(outputs) if isinstance(n, torch.fx.Node)]
                if inductor_config.bw_outputs_user_visible
                else []
            )
            out_node.meta["user_visible_output_idxs"] = visible
            return {"is_backward": True}
        start = 0
        if kind == "forward":
            tc = torch._guards.TracingContext.try_get()
            if tc is not None and tc.fw_metadata is not None:
                start = tc.fw_metadata.num_mutated_inp_runtime_indices
        if inductor_config.keep_output_stride:
            end = min(start + self.num_dynamo_outputs, len(outputs))
            out_node.meta["user_visible_output_idxs"] = [
                i for i in range(start, end) if isinstance(outputs[i], torch.fx.Node)
            ]
        else:
            out_node.meta["user_visible_output_idxs"] = []
        return {"is_inference": kind == "inference"}

    def restart(self) -> None:
        """Forget a compile attempt abandoned half-way (CacheWriteFailed)."""
        self.lowering_s = self.codegen_s = 0.0
        self.cache_results = []
        self.session = None
        self.fw_nodes = self.bw_nodes = None
        self.through_decomposition = set()

    def cache_status(self) -> str:
        if not self.cache_results:
            return "none"
        if all(s == "disabled" for s in self.cache_results):
            return "disabled"
        return "hit" if all(s == "hit" for s in self.cache_results) else "miss"


def _compile_static(
    gm, example_inputs, opts: _Options, function: str, placement: _InputPlacement, sources
):
    t0 = time.perf_counter()
    state = _GraphCompile(gm, example_inputs, opts, function, placement.device, sources)
    artifacts.dump_graph(state.dir, "dynamo_graph.txt", gm)
    fake_mode = torch._guards.detect_fake_mode(example_inputs)
    outside_dynamo = torch._guards.TracingContext.try_get() is None

    def tracing():
        if outside_dynamo:
            return torch._guards.tracing(torch._guards.TracingContext(fake_mode))
        return contextlib.nullcontext()

    runner: Callable
    status: str
    _loading.state = state
    try:
        try:
            runner = _run_aot_autograd(gm, example_inputs, state, tracing, None)
        except cache.CacheWriteFailed:
            # a write into the persistent cache failed (full disk, read-only; warned once):
            # compile this graph again, and everything after it, without the cache
            state.restart()
            runner = _run_aot_autograd(
                gm, example_inputs, state, tracing, cache.PersistentCache.disabled()
            )
        status = state.cache_status()
    except _RunEagerly as exc:
        ops = ", ".join(i.op for i in exc.illegal)
        log.warning(
            "neuron backend: graph '%s' contains non-native operator(s) %s; running it "
            "eagerly (fallback execution)",
            state.name,
            ops,
        )
        runner = gm.forward
        status = "fallback"
        state.through_decomposition.clear()  # nothing was compiled
    finally:
        _loading.state = None
    total = time.perf_counter() - t0
    record = {
        "name": state.name,
        "model_name": opts.model_name,
        "function": function,
        "graph_index": state.graph_index,
        "node_count": len(gm.graph.nodes),
        "fw_node_count": state.fw_nodes,
        "bw_node_count": state.bw_nodes,
        "input_shapes": [_shape_of(x) for x in example_inputs],
        "through_decomposition": sorted(state.through_decomposition),
        "cache": status,
        "aot_cache": state.session.aot if state.session is not None else "disabled",
        "aot_autograd_s": max(0.0, total - state.lowering_s - state.codegen_s),
        "lowering_s": state.lowering_s,
        "codegen_s": state.codegen_s,
        "total_s": total,
        "timestamp": time.time(),
    }
    dynamo_metrics._add_record(record)
    artifacts.dump_json(state.dir, "metrics.json", record)
    if state.new_shape and state.graph_index == config.shape_warning_threshold():
        msg = (
            f"neuron backend: {function} has now compiled {state.graph_index} graphs "
            "(one per distinct input shape; shapes are static on Neuron). Pad or bucket "
            "inputs to a few fixed shapes to avoid recompiling."
        )
        log.warning(msg)
        warnings.warn(msg, stacklevel=2)
    return torch._dynamo.disable(placement.wrap(runner), reason="neuron compiled graph")


def _run_aot_autograd(gm, example_inputs, state: _GraphCompile, tracing, store):
    """AOTAutograd with our compilers, against ``store`` (default: the current persistent
    cache; with the AOT-level cache when it may be used)."""
    from torch._functorch import config as functorch_config
    from torch._functorch.aot_autograd import aot_module_simplified

    if store is None:
        store = cache.PersistentCache.current()
    compilers = [state.forward_compiler, state.backward_compiler, state.inference_compiler]
    aot_tag = None
    if store.enabled and not config.preserve_artifacts():
        # (preserved artifacts need the traced graphs, so that debug mode always traces)
        aot_tag = aot_cache.key_tag(state.opts.cache_tag())
    if aot_tag:
        compilers = [aot_cache.serializable(c) for c in compilers]
    key = store.graph_key(
        gm, example_inputs, "dynamo", {"grad": torch.is_grad_enabled()}, aot_tag or ""
    )
    with (
        store.graph_session(key, aot_tag) as session,
        tracing(),
        functorch_config.patch(force_non_lazy_backward_lowering=True),
    ):
        state.session = session
        return aot_module_simplified(
            gm,
            example_inputs,
            fw_compiler=compilers[0],
            bw_compiler=compilers[1],
            inference_compiler=compilers[2],
            partition_fn=state.partition,
            decompositions=neuron_decompositions(),
            keep_inference_input_mutations=True,
        )


# --------------------------------------------------------------------------- symbolic graphs


class _ShapeSpecializingFunction:
    """Dynamo handed us a graph with symbolic sizes (automatic dynamic shapes or
    mark_dynamic): compile one static graph per distinct concrete input signature."""

    def __init__(self, gm, example_inputs, opts, function, placement):
        self.gm = gm
        self.opts = opts
        self.function = function
        self.placement = placement
        self.requires_grad = [
            isinstance(x, torch.Tensor) and x.requires_grad for x in example_inputs
        ]
        self.sources = _input_sources(gm)
        self.compiled: dict[Any, Callable] = {}
        self.lock = threading.Lock()

    @staticmethod
    def _signature(args):
        sig = []
        for a in args:
            if isinstance(a, torch.Tensor):
                sig.append(
                    (
                        tuple(a.shape),
                        tuple(a.stride()),
                        a.storage_offset(),
                        a.dtype,
                        a.device,
                        a.requires_grad,
                    )
                )
            else:
                sig.append(("v", type(a).__name__, a))
        return tuple(sig)

    def _compile_for(self, args):
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.fx.experimental.symbolic_shapes import ShapeEnv

        fake_mode = FakeTensorMode(shape_env=ShapeEnv(), static_shapes=True)
        fakes = []
        for a, rg in zip(args, self.requires_grad):
            if isinstance(a, torch.Tensor):
                f = fake_mode.from_tensor(a, static_shapes=True)
                if rg and not f.requires_grad and f.is_leaf:
                    f.requires_grad_(True)
                fakes.append(f)
            else:
                fakes.append(a)
        gm = torch.fx.GraphModule(self.gm, self.gm.graph)  # fresh module per specialisation
        with torch._guards.tracing(torch._guards.TracingContext(fake_mode)):
            # the outer autocopy wrapper (self.placement.wrap) moved CPU inputs already
            return _compile_static(
                gm,
                fakes,
                self.opts,
                self.function,
                _InputPlacement.all_on_device(self.placement.device),
                self.sources,
            )

    def __call__(self, *args):
        sig = self._signature(args)
        fn = self.compiled.get(sig)
        if fn is None:
            with self.lock:
                fn = self.compiled.get(sig)
                if fn is None:
                    fn = self._compile_for(args)
                    self.compiled[sig] = fn
        return fn(*args)


# --------------------------------------------------------------------------- random ops


def _replace_random_ops(gm: torch.fx.GraphModule, example_inputs) -> torch.fx.GraphModule:
    """Inductor's random-op pass on an inference graph: no partitioner ran, so Inductor's
    joint-graph passes (which include it) did not either, and Inductor's lowerings of
    ``rand``/``randn``/``bernoulli`` assert that it did. Only this pass, not all the joint
    passes: one of those fails on ``x[torch.randperm(n)]`` in PyTorch 2.13 (plain Inductor on
    CPU too), and inference graphs compiled without them before."""
    from torch._inductor.fx_passes.replace_random import replace_random_passes
    from torch._inductor.virtualized import V

    fake_mode = torch._guards.detect_fake_mode(example_inputs)
    with V.set_fake_mode(fake_mode) if fake_mode is not None else contextlib.nullcontext():
        if replace_random_passes(gm):
            gm.graph.lint()
            gm.recompile()
    return gm


# --------------------------------------------------------------------------- lowering


class _Lowered:
    def __init__(self, gm, host_inputs, fake_mode, device_inputs, device_outputs):
        self.gm = gm
        self.host_inputs = host_inputs
        self.fake_mode = fake_mode
        self.device_inputs = device_inputs
        self.device_outputs = device_outputs


def _host_device(dev):
    if isinstance(dev, torch.device) and dev.type == "neuron":
        return torch.device("cpu")
    if isinstance(dev, str) and dev.split(":")[0] == "neuron":
        return torch.device("cpu")
    return dev


def _rewrite_arg(a):
    if isinstance(a, (torch.device, str)):
        return _host_device(a)
    if isinstance(a, (list, tuple)):
        return type(a)(_rewrite_arg(x) for x in a)
    if isinstance(a, dict):
        return {k: _rewrite_arg(v) for k, v in a.items()}
    return a


def _lower_to_host(gm: torch.fx.GraphModule, example_inputs) -> _Lowered:
    """Rewrite an ATen graph over neuron tensors into the same graph over host tensors."""
    from .host_prop import HostFakeTensorProp

    fake_mode = torch._guards.detect_fake_mode(example_inputs)
    if fake_mode is None:
        from torch._subclasses.fake_tensor import FakeTensorMode

        fake_mode = FakeTensorMode(allow_non_fake_inputs=True)

    out_node = next(iter(reversed(gm.graph.nodes)))
    out_vals = [
        (n.meta.get("val") if isinstance(n, torch.fx.Node) else n)
        for n in torch.utils._pytree.arg_tree_leaves(*out_node.args)
    ]
    device_outputs = tuple(i for i, v in enumerate(out_vals) if _is_neuron_tensor(v))
    device_inputs = tuple(i for i, x in enumerate(example_inputs) if _is_neuron_tensor(x))

    for node in gm.graph.nodes:
        if node.op == "call_function":
            node.args = _rewrite_arg(node.args)
            node.kwargs = _rewrite_arg(node.kwargs)
        elif node.op == "get_attr":
            attr = getattr(gm, node.target, None) if "." not in node.target else None
            if _is_neuron_tensor(attr):
                setattr(gm, node.target, host_alias(attr))
    gm.recompile()

    host_inputs = []
    with fake_mode:
        for x in example_inputs:
            if _is_neuron_tensor(x):
                numel = (
                    x.storage_offset()
                    + 1
                    + sum((s - 1) * st for s, st in zip(x.shape, x.stride()) if s > 0)
                )
                base = torch.empty(max(numel, 1), dtype=x.dtype, device="cpu")
                try:
                    h = base.as_strided(x.shape, x.stride(), x.storage_offset())
                except Exception:
                    h = torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device="cpu")
                host_inputs.append(h)
            else:
                host_inputs.append(x)
    HostFakeTensorProp(gm, mode=fake_mode).propagate_dont_convert_inputs(*host_inputs)
    return _Lowered(gm, host_inputs, fake_mode, device_inputs, device_outputs)
