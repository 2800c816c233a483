"""The executable of one forward/backward/inference graph: Inductor's host code run directly
on the memory of neuron tensors.

It is an Inductor ``OutputCode`` so that PyTorch's AOTAutogradCache (bundled mode) can store
it with the partitioned graphs and AOTAutograd's runtime metadata: the entry pickles this
object (the inner ``CompiledFxGraph`` in its serialisable form plus our device bookkeeping),
and a later process gets it back through :meth:`post_compile`, which reloads the generated
module and its kernels from the Inductor cache directory -- no tracing, partitioning or code
generation.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Sequence
from typing import Any

from torch._inductor.output_code import OutputCode

from torch_neuronx.perf import clock as _perf_clock
from torch_neuronx.perf import report as _perf_report
from torch_neuronx.runtime.host import adopt, device_allocations, host_alias

#: the ``_GraphCompile`` of the graph being compiled on this thread (set by the backend);
#: cache loads report to it (kind, node counts, load time)
_loading = threading.local()


class _DeviceExecutable(OutputCode):
    """Boxed callable: runs Inductor's host code directly on the memory of neuron tensors.

    Inputs that are neuron tensors are replaced by their host aliases (same bytes, no
    copy); the kernels run with this thread's CPU allocations taken from the device's memory
    (``as_device_memory``), so every buffer they create -- outputs, saved activations and the
    intermediates freed before the graph returns -- is device memory: capacity-checked
    (``torch.OutOfMemoryError``) and in the device's statistics and peak, as a NEFF's
    intermediates live in HBM. The outputs are adopted as neuron tensors without a copy. All
    three go through torch_neuronx.runtime.host."""

    def __init__(
        self,
        compiled,
        device,
        device_inputs,
        device_outputs,
        kind: str,
        n_nodes: int,
        perf_plan=None,
        random_draws: Sequence[Any] = (),
    ):
        self.compiled = compiled
        self.device = device
        self.device_inputs = tuple(device_inputs)
        self.device_outputs = tuple(device_outputs)
        self.kind = kind
        self.n_nodes = n_nodes
        # the kernels the performance model costs per call (torch_neuronx/perf/graph.py)
        self.perf_plan = perf_plan
        # the random numbers the graph reads as extra inputs, drawn on the device at each
        # call with eager's kernels and generator (random_inputs.py)
        self.random_draws = tuple(random_draws)
        # AOTAutogradCache records the compile time of what it stores
        self._time_taken_ns = getattr(compiled, "_time_taken_ns", None) or 0
        # an instance attribute (pickled with the rest): wrappers built with functools.wraps
        # (e.g. the torch._dynamo.disable that AOTAutograd puts around a cached backward)
        # copy __dict__, and AOTAutograd calls boxed only what carries _boxed_call
        self._boxed_call = True

    def __call__(self, args: list[Any]):
        # a training step crosses this boundary ~100 times: host's functions take the index
        index = self.device.index
        for draw in self.__dict__.get("random_draws", ()):
            args.append(draw.draw(self.device))
        for i in self.device_inputs:
            args[i] = host_alias(args[i])
        with device_allocations(index, as_device_memory=True):
            outs = self.compiled(args)
        if not isinstance(outs, list):
            outs = list(outs)
        for i in self.device_outputs:
            o = outs[i]
            if o is not None:
                outs[i] = adopt(o, index)
        if _perf_clock.recording():
            plan = self.__dict__.get(
                "perf_plan"
            )  # None: planner failed, or cached before it existed
            if plan is not None:
                _perf_report.graph(index or 0, plan)
        return outs

    @property
    def source_code(self) -> str | None:
        return getattr(self.compiled, "source_code", None)

    # ---- OutputCode: persistence through AOTAutogradCache
    def prepare_for_serialization(self) -> None:
        # a graph whose AOTAutograd metadata cannot be pickled (aot_cache.unsafe_to_save) is
        # not saved: AOTAutogradCache counts the bypass and keeps the live graph
        reason = self.__dict__.get("unsafe_to_save", "")
        if reason:
            from torch._functorch._aot_autograd.autograd_cache import BypassAOTAutogradCache

            raise BypassAOTAutogradCache(reason)
        # called on a shallow copy of the live executable: copy the inner graph as well so
        # the live one keeps its loaded callable
        inner = copy.copy(self.compiled)
        inner.prepare_for_serialization()
        self.compiled = inner

    def post_compile(self, example_inputs: Sequence[Any], constants, graph_kwargs) -> None:
        """Cache hit: reload the generated module and kernels (Inductor's own hit path)."""
        from torch._inductor.codecache import FxGraphCache

        t0 = time.perf_counter()
        graph, _ = FxGraphCache.cache_hit_post_compile(self.compiled, {}, constants)
        if graph is None:
            raise RuntimeError("neuron compile cache: generated module could not be reloaded")
        graph.post_compile(example_inputs, constants, graph_kwargs)
        self.compiled = graph
        state = getattr(_loading, "state", None)
        if state is not None:
            state.loaded_from_cache(self, time.perf_counter() - t0)

    def set_triton_bundle(self, triton_bundle: Any) -> None:
        self.compiled.set_triton_bundle(triton_bundle)

    def __getattr__(self, name):  # AOTAutograd reads attributes of the compiled graph
        if name.startswith("__") or "compiled" not in self.__dict__:
            raise AttributeError(name)
        return getattr(self.__dict__["compiled"], name)
