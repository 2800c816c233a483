"""What each top-level module call of a ``--fake`` trace is: a forward of the training step, or
an inference forward (autograd off, module in eval mode) that may lie outside the step.

A real training script does more than its step before the first optimizer step: nanoGPT's
``train.py`` runs ``estimate_loss()`` at iteration 0 (``eval_iters`` = 200 forward passes per
split under ``torch.no_grad()`` and ``model.eval()``) and accumulates ``gradient_accumulation_steps``
= 40 micro-batches into one step. Counting the evaluation's forwards as the step's work made the
projection wrong (and the first module call, an evaluation batch, gave the step's input size);
counting one micro-batch as the step's tokens made tokens/s wrong by 40x. So:

- the **step's input** is the first top-level module called with autograd on (or in training
  mode); every call of that module during the step adds its batch (samples, and tokens for
  integer ids) -- 40 micro-batches are 40 x 12 x 1024 tokens;
- an **inference forward** (top level, autograd off, eval mode) records its ops apart. When the
  step ends with an optimizer that updates that module's parameters, the forward was an
  evaluation of the model being trained: reported beside the step, not in it. Otherwise (a
  frozen teacher, an inference-only script) its ops belong to the step;
- a repeated inference forward (same module, same input shapes and dtypes, same autocast) runs
  once: later calls return new fake outputs of the same shapes and count the recorded work
  again. A fake forward computes no value, so only its shapes and work matter; a call whose
  inputs or outputs hold anything but tensors and plain scalars (a KV cache object, whose
  contents change the next call) always runs. This makes nanoGPT's default 400 evaluation
  forwards cost one.
"""

from __future__ import annotations

import collections
import math
import weakref

import torch
from torch.utils import _pytree
from torch.utils.weak import WeakTensorKeyDictionary

from .callsite import user_site

_SCALARS = (int, float, bool, str, type(None), torch.dtype, torch.device)


class InferenceForward:
    """The ops of one kind of inference forward (a module, input shapes), and how often it ran."""

    def __init__(self, module: torch.nn.Module, site: str):
        self.name = type(module).__name__
        self.module = weakref.ref(module)  # a memo hit must be this very module (ids recycle)
        self.site = site
        self.param_ids = {id(p) for p in module.parameters()}
        self.calls = 1
        self.works: list = []
        self.ops = 0
        # its own ATen graph for the compiled-graph planner (fake.FakeStepRecorder._add_node)
        self.graph = torch.fx.Graph()
        self.node = WeakTensorKeyDictionary()
        self.alive: list = []
        self.out_meta = None  # the outputs' (shape, stride, dtype, device) tree, to replay
        # reads of its outputs on the host (an evaluation's loss.item()): site -> count
        self.reads: collections.Counter = collections.Counter()
        # work of ops on its outputs outside it (an evaluation's metrics), all calls together
        self.after: list = []


def _meta(t: torch.Tensor) -> tuple:
    return (tuple(t.shape), tuple(t.stride()), t.dtype, str(t.device), t.requires_grad)


def _key(module, args, kwargs):
    """The memo key of an inference call, or None when it must run (non-tensor state)."""
    leaves, spec = _pytree.tree_flatten((args, kwargs))
    parts = []
    for x in leaves:
        if isinstance(x, torch.Tensor):
            parts.append(_meta(x))
        elif isinstance(x, _SCALARS):
            parts.append(x)
        else:
            return None
    amp = (
        torch.is_autocast_enabled("neuron"),
        torch.get_autocast_dtype("neuron"),
        torch.is_autocast_enabled("cpu"),
    )
    return (id(module), module.training, amp, str(spec), tuple(parts))


def _out_meta(out):
    leaves, spec = _pytree.tree_flatten(out)
    if not all(isinstance(x, (torch.Tensor, *_SCALARS)) for x in leaves):
        return None
    return spec, [_meta(x) if isinstance(x, torch.Tensor) else ("value", x) for x in leaves]


def _replay(out_meta):
    spec, metas = out_meta
    leaves = []
    for m in metas:
        if m[0] == "value":
            leaves.append(m[1])
            continue
        shape, stride, dtype, device, grad = m
        leaves.append(torch.empty_strided(shape, stride, dtype=dtype, device=device))
    return _pytree.tree_unflatten(leaves, spec)


class ForwardTracker:
    """Top-level module calls of a fake trace (see the module doc); owned by the recorder."""

    def __init__(self, rec):
        self.rec = weakref.proxy(rec)
        self.depth = 0
        self.inference: list[InferenceForward] = []
        self._memo: dict = {}
        self.current: InferenceForward | None = None
        # the step's input: the module and the shapes of each of its calls in the step
        self.input_module = None
        self.input_shapes: list = []
        self.input_integer = False
        self.input_site = None
        self.first_any = None  # (shape, integer, site) of the first call of any kind
        self.outputs = WeakTensorKeyDictionary()  # output tensor -> its InferenceForward

    def call(self, real, module, *args, **kwargs):
        if self.depth or not self.rec.recording or self.current is not None:
            return self._run(real, module, args, kwargs)
        x = _first_tensor(args, kwargs)
        if x is not None and self.first_any is None:
            self.first_any = (tuple(x.shape), _integer(x), user_site())
        if torch.is_grad_enabled() or module.training:
            self._note_input(module, x)
            return self._run(real, module, args, kwargs)
        return self._inference(real, module, args, kwargs)

    def _run(self, real, module, args, kwargs):
        self.depth += 1
        try:
            return real(module, *args, **kwargs)
        finally:
            self.depth -= 1

    def _note_input(self, module, x) -> None:
        if x is None or x.dim() == 0:
            return
        if self.input_module is None:
            self.input_module = weakref.ref(module)
            self.input_integer = _integer(x)
            self.input_site = user_site()
        if self.input_module() is module:
            self.input_shapes.append(tuple(x.shape))

    def _inference(self, real, module, args, kwargs):
        key = _key(module, args, kwargs)
        seen = self._memo.get(key) if key is not None else None
        if seen is not None and seen.out_meta is not None and seen.module() is module:
            seen.calls += 1
            with self.rec.muted():
                out = _replay(seen.out_meta)
            self._tag(out, seen)
            return out
        fwd = InferenceForward(module, user_site())
        self.inference.append(fwd)
        self.current = fwd
        try:
            out = self._run(real, module, args, kwargs)
        finally:
            self.current = None
        fwd.out_meta = _out_meta(out)
        if key is not None:
            self._memo[key] = fwd
        self._tag(out, fwd)
        return out

    def _tag(self, out, fwd: InferenceForward) -> None:
        for t in _pytree.tree_leaves(out):
            if isinstance(t, torch.Tensor):
                self.outputs[t] = fwd

    def derived(self, args, out) -> InferenceForward | None:
        """The inference forward an op outside any forward works on the outputs of (its own
        outputs are then that forward's too), or None. Only with autograd off and outside the
        backward: a training loss built on a frozen teacher's outputs is the step's."""
        if not self.outputs or torch.is_grad_enabled() or torch._C._current_graph_task_id() != -1:
            return None
        fwd = next(
            (
                f
                for a in _pytree.tree_leaves(args)
                if isinstance(a, torch.Tensor) and (f := self.outputs.get(a)) is not None
            ),
            None,
        )
        if fwd is not None:
            self._tag(out, fwd)
        return fwd

    def read_of(self, t: torch.Tensor) -> InferenceForward | None:
        """The inference forward whose output ``t`` is (a host read of it is that forward's)."""
        return self.outputs.get(t)

    def split(self, optimized: set) -> tuple[list, list]:
        """(forwards of the step, evaluation forwards outside it): an inference forward of a
        module whose parameters the stepped optimizers update was an evaluation."""
        inside, outside = [], []
        for f in self.inference:
            (outside if optimized and f.param_ids & optimized else inside).append(f)
        return inside, outside

    def inputs(self) -> dict | None:
        """Samples (and tokens, for integer ids) per step: the step input's calls, summed."""
        if self.input_shapes:
            shape = self.input_shapes[0]
            samples = sum(s[0] for s in self.input_shapes)
            tokens = sum(math.prod(s) for s in self.input_shapes) if self.input_integer else None
            calls, site, integer = len(self.input_shapes), self.input_site, self.input_integer
        elif self.first_any is not None:  # an inference-only script: its first call
            shape, integer, site = self.first_any
            samples, calls = shape[0], 1
            tokens = math.prod(shape) if integer else None
        else:
            return None
        out = {"shape": list(shape), "site": site, "calls": calls, "samples_per_step": int(samples)}
        if integer and tokens is not None:
            out["tokens_per_step"] = int(tokens)
        return out


def _integer(x: torch.Tensor) -> bool:
    return not x.is_floating_point() and not x.is_complex()


#: keyword arguments that name a model's input, in the order they are looked for
_INPUT_KWARGS = ("input_ids", "idx", "x", "input", "pixel_values", "inputs_embeds")


def _first_tensor(args, kwargs):
    for a in args:
        if isinstance(a, torch.Tensor):
            return a
    for k in _INPUT_KWARGS:
        if isinstance(kwargs.get(k), torch.Tensor):
            return kwargs[k]
    return next((v for v in kwargs.values() if isinstance(v, torch.Tensor)), None)
