"""The one step tracker of every evaluation mode: which optimizer steps are the workload's
steps, and the loss and gradient norm of each.

The instrumented run (collector.py), the ``--reference`` re-runs (reference.py), ``--fake``
(cli.py) and the Python API all delimit steps here, so they agree on what a step is:

- a step ends at the post-step hook of a *counted* optimizer (PyTorch's global
  ``register_optimizer_step_post_hook``), or at ``torch_neuronx.evaluate.step()`` once the
  script calls it (then optimizer steps no longer delimit: ``explicit``);
- which optimizers count: ``"device"`` (those whose parameters are not on the CPU: a CPU twin
  the script keeps for its own checks is not the device's step, and is remembered in
  ``host_optimizers``), ``"any"`` (``--fake``: every tensor is fake), or a set of ordinals
  in the order optimizers first stepped (a re-run counts the same optimizers as the
  instrumented run did);
- the gradient norm is read in the pre-step hook, before the step (foreach Nesterov SGD adds
  the momentum into ``p.grad`` in place, so after the step it is no longer the gradient) and
  after any clipping the script does before ``step()``;
- the loss is the scalar the script last called ``backward()`` on (runner.py's loss watch
  calls :meth:`StepTracker.saw_backward`), or the value passed to ``step(loss)``;
- a script with no optimizer that updates its parameters by hand (pytorch/examples'
  word_language_model: ``p.data.add_(p.grad, alpha=-lr)``) trains too: ``manual="detect"``
  (the instrumented run) fingerprints the device leaves a ``backward()`` reached when it ends,
  and at the next ``backward()`` (or the end of the run) a leaf that changed means an update
  ran: the step ends there (``manual``: its steps are the updates between backward calls, so
  gradient accumulation is one step). A step then holds one backward, the update, and the
  next forward; the last one also holds what ran after the last backward (the end of the run
  closes it). Detection stops at the first optimizer step (then optimizers delimit);
  ``manual=True`` (a re-run of a manual run) fingerprints leaves on any device. The gradient
  norm of a manual step is read when its backward ends (before any clipping);
- ``steps_limit`` (``--steps N``) raises :class:`StepLimitReached` at the N-th boundary.

Values are read on the host inside ``quiet()`` (the collector's ``internal()``: not the
script's host syncs); ``read_values=False`` (``--fake``: fake tensors have no values) reads
none."""

from __future__ import annotations

import contextlib
import time

import torch
from torch.optim.optimizer import (
    register_optimizer_step_post_hook,
    register_optimizer_step_pre_hook,
)

_active: list = []  # the started trackers, innermost last (torch_neuronx.evaluate.step())


class StepLimitReached(BaseException):
    """Raised at the N-th step boundary of ``--steps N``: the run stops there (BaseException so
    that a script's ``except Exception`` does not swallow it)."""


class StepTracker:
    def __init__(
        self,
        *,
        count="device",
        explicit: bool = False,
        steps_limit: int | None = None,
        read_values: bool = True,
        quiet=contextlib.nullcontext,
        on_step=None,
        manual=False,
    ):
        if count not in ("device", "any") and not isinstance(count, (set, frozenset, list)):
            raise ValueError(f"count: 'device', 'any' or a set of ordinals, not {count!r}")
        self.count = set(count) if isinstance(count, (set, frozenset, list)) else count
        self.explicit = explicit
        self.steps_limit = steps_limit
        self.read_values = read_values
        self.quiet = quiet
        self.on_step = on_step  # (loss value or None, grad norm or None) -> None, per step
        if manual not in (False, True, "detect"):
            raise ValueError(f"manual: False, True or 'detect', not {manual!r}")
        self.manual_mode = manual  # look for by-hand parameter updates (module doc)
        self.manual = False  # steps are by-hand updates (seen at least once)
        self.manual_params: list = []  # the leaves those updates changed
        self._leaves: list = []  # device leaves of the backward() that is running
        self._probe = None  # (leaves, fingerprint) when the last backward() ended
        self.order: list = []  # every optimizer that stepped, by its first step
        self.optimizers: list = []  # the counted optimizers that stepped
        self.host_optimizers: list = []  # "device": optimizers over CPU tensors that stepped
        self.pending_loss = None
        self.backward_calls = 0  # the script trained (a backward ran): the kind of work
        self.steps = 0
        self.loss: list = []
        self.grad_norm: list = []
        self.wall_s: list = []
        self._pre_sq: dict = {}  # id(optimizer) -> squared grad norm read before its step
        self._hooks: list = []
        self._t = time.perf_counter()

    # -- region ---------------------------------------------------------------------------
    def start(self) -> StepTracker:
        self._hooks = [
            register_optimizer_step_pre_hook(self._before_step),
            register_optimizer_step_post_hook(self._after_step),
        ]
        self._t = time.perf_counter()
        _active.append(self)
        return self

    def stop(self) -> None:
        if self._hooks and self._probe is not None and self._watching_updates():
            try:
                self._close_manual_step()  # the update after the last backward
            except StepLimitReached:
                pass
        for h in self._hooks:
            h.remove()
        self._hooks = []
        if self in _active:
            _active.remove(self)

    @property
    def started(self) -> bool:
        return bool(self._hooks)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    # -- what the script does ---------------------------------------------------------------
    def saw_backward(self, tensor) -> None:
        """``tensor.backward()`` ran (runner.py's loss watch): a scalar is the step's loss."""
        self.backward_calls += 1
        self._leaves = []
        if self._watching_updates():
            self._close_manual_step()  # before this loss replaces the step's loss
            self._leaves = _leaves(tensor, any_device=self.manual_mode is True)
        if tensor.numel() == 1:
            self.pending_loss = tensor

    def after_backward(self, tensor) -> None:
        """``tensor.backward()`` returned: fingerprint the leaves it reached (module doc)."""
        leaves, self._leaves = self._leaves, []
        if leaves and self._watching_updates():
            with self.quiet():
                self._probe = (leaves, _fingerprint(leaves))
                self._pre_sq["manual"] = _sq(p.grad for p in leaves)

    def _watching_updates(self) -> bool:
        return bool(self.manual_mode) and self.read_values and not self.explicit and not self.order

    def _close_manual_step(self) -> None:
        """Ends a step if a leaf of the last backward() changed since it ended."""
        probe, self._probe = self._probe, None
        if probe is None:
            return
        leaves, before = probe
        with self.quiet():
            changed = not torch.equal(_fingerprint(leaves), before)
        if changed:
            self.manual = True
            known = {id(p) for p in self.manual_params}
            self.manual_params += [p for p in leaves if id(p) not in known]
            self.mark_step()
        # unchanged: gradient accumulation (the next backward adds to the same gradients)

    def _ordinal(self, optimizer) -> int:
        for i, o in enumerate(self.order):
            if o is optimizer:
                return i
        self.order.append(optimizer)
        return len(self.order) - 1

    def counts(self, optimizer) -> bool:
        if self.count == "any":
            return True
        if self.count == "device":
            return not on_host(optimizer)
        return self._ordinal(optimizer) in self.count

    def _before_step(self, optimizer, args, kwargs) -> None:
        self._probe = None  # an optimizer delimits steps from now on
        self._ordinal(optimizer)
        if self.read_values and self.counts(optimizer):
            with self.quiet():
                self._pre_sq[id(optimizer)] = grad_sq(optimizer)

    def _after_step(self, optimizer, args, kwargs) -> None:
        self._ordinal(optimizer)
        if not self.counts(optimizer):
            if self.count == "device" and not any(o is optimizer for o in self.host_optimizers):
                self.host_optimizers.append(optimizer)
            return
        if not any(o is optimizer for o in self.optimizers):
            self.optimizers.append(optimizer)
        if not self.explicit:
            self.mark_step()

    # -- the boundary -----------------------------------------------------------------------
    def mark_step(self, loss=None) -> None:
        """Ends one step: reads its loss and gradient norm, tells ``on_step``, and stops the
        run at ``steps_limit``."""
        loss = self.pending_loss if loss is None else loss
        self.pending_loss = None
        lv = gn = None
        if self.read_values:
            with self.quiet():
                if loss is not None:
                    lv = (
                        float(loss.detach().float().cpu())
                        if isinstance(loss, torch.Tensor)
                        else float(loss)
                    )
                gn = self._grad_norm()
        self._pre_sq.clear()
        self.steps += 1
        now = time.perf_counter()
        self.loss.append(lv)
        self.grad_norm.append(gn)
        self.wall_s.append(now - self._t)
        self._t = now
        if self.on_step is not None:
            self.on_step(lv, gn)
        if self.steps_limit is not None and self.steps >= self.steps_limit:
            raise StepLimitReached(self.steps)

    def _grad_norm(self):
        """Over the counted optimizers' parameters, as each read them before its step; an
        optimizer that has not stepped since is read now."""
        sq = [self._pre_sq[id(o)] if id(o) in self._pre_sq else grad_sq(o) for o in self.optimizers]
        if self.manual and not self.optimizers:
            sq = [self._pre_sq.get("manual")]
        sq = [x for x in sq if x is not None]
        return float(sum(sq) ** 0.5) if sq else None

    def counted_ordinals(self) -> list:
        """The first-step ordinals of the counted optimizers (what a re-run counts)."""
        return [i for i, o in enumerate(self.order) if any(o is x for x in self.optimizers)]


def current() -> StepTracker | None:
    return _active[-1] if _active else None


def step(loss=None) -> None:
    """Marks the end of one step of the evaluated workload (a no-op outside an evaluation).
    Once a script calls this, optimizer steps no longer delimit steps."""
    tr = current()
    if tr is None:
        return
    tr.explicit = True
    tr.mark_step(loss)


def on_host(optimizer) -> bool:
    first = next((p for g in optimizer.param_groups for p in g["params"]), None)
    return first is not None and first.device.type == "cpu"


def grad_sq(optimizer) -> float | None:
    """The squared norm of an optimizer's gradients (None: no gradient), read on the host."""
    return _sq(p.grad for g in optimizer.param_groups for p in g["params"])


def _sq(grads) -> float | None:
    grads = [g for g in grads if g is not None]
    if not grads:
        return None
    return float(sum(g.detach().float().pow(2).sum().cpu() for g in grads))


def _leaves(tensor, any_device: bool) -> list:
    """The leaves that ``tensor.backward()`` accumulates gradients into (its graph's
    AccumulateGrad nodes), those on the device unless ``any_device``."""
    fn = getattr(tensor, "grad_fn", None)
    seen, todo, out = set(), [fn] if fn is not None else [], []
    while todo:
        node = todo.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        var = getattr(node, "variable", None)
        if isinstance(var, torch.Tensor):
            if any_device or var.device.type != "cpu":
                out.append(var)
            continue
        todo.extend(n for n, _ in node.next_functions)
    return out


def _fingerprint(leaves) -> torch.Tensor:
    """A checksum of each leaf's bytes (an update by any route, ``p.data`` included, changes
    it; a float sum could round a small update away), read on the host."""
    sums = [
        t.detach().contiguous().reshape(-1).view(torch.uint8).sum(dtype=torch.int64).cpu()
        for t in leaves
    ]
    return torch.stack(sums)
