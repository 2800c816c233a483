"""The zoo's accuracy check: a few SGD steps of one model on neuron against the same on CPU.

In the spirit of PyTorch's Dynamo benchmark suites (their `--accuracy --training` check):
the model is built once on CPU from a seed, deep-copied and moved to neuron, so both sides
start from the same bits; each side runs `STEPS` steps of plain SGD on the same synthetic
batch; the losses of every step and the gradients of every step are compared. The reference
is CPU eager; the device side runs eager or under ``torch.compile(backend="neuron")``.

The loss is a fixed random projection of every floating output (a seeded weight per output
shape), not the outputs' mean: the mean of a normalised output (LayerNorm, RMSNorm) has a
gradient that is zero up to rounding, which would compare rounding noise with rounding noise.
Infinite entries (logits a model masks to -inf by design) are left out of it; NaNs are not.

Tolerances (float32): a loss within `RTOL` relative; a gradient `g` against the reference `r`
within ``||g - r|| <= RTOL * max(||r||, FLOOR * mean_norm)``, where `mean_norm` is the mean
gradient norm of the model: the norm-wise form of the benchmarks' cosine/rtol check, with a
floor so that a parameter whose gradient is nearly zero is not held to a relative bound on
its rounding noise.

A model that misses these bounds gets a second judgement against a float64 reference (the same
steps on CPU in float64), as the Dynamo benchmarks' accuracy check does: the device passes when
each loss and gradient is no further from float64 than `MULTIPLIER` times CPU float32's own
distance from it, plus `RTOL` / 10 (their ``same(..., fp64_ref=..., multiplier=3.0)``).
Compiled training of a BatchNorm model with batch 2 needs it: CPU Inductor itself is 1.2e-3
off CPU eager in timm's test_resnet's second-step gradients, where CPU eager is 3.9e-3 off
float64 (measured; compiled is closer to float64 than eager is).

A compiled run that fails both judgements gets a third: the same steps compiled on CPU by
Inductor (``torch.compile`` with its default backend), compared with the float32 bounds above.
The device passes when it matches that compiled reference, as the Dynamo benchmarks compare a
compiled run with the same model compiled. It is needed where float32 rounding is amplified
beyond what float64 can arbitrate: timm's test_efficientnet at batch 2 and 32 px leaves its
BatchNorms two values per channel at the 1x1 stages, and CPU eager's own step-1 gradients are
as far from float64 as the compiled ones, while CPU Inductor gives bit for bit the neuron
backend's losses and gradients. Only a failing compiled run pays for the CPU compile.

A compiled run that raises is tried under CPU Inductor too: when ``torch.compile`` on CPU raises
the same error (the root cause's type and message, device names aside), the failure is
PyTorch's, not the backend's -- Dynamo cannot trace the model, whatever the device (hf:udop
indexes a tensor with a tuple of 0-dim tensors, which Dynamo's fake tensors cannot read). The
CPU reference of the compiled mode is then missing, as when CPU eager raises: ``cpu_error``,
with both errors. A different CPU error, or none, leaves the device's failure standing.
"""

from __future__ import annotations

import copy
import inspect
import math
import re
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from torch_neuronx.compile import NonNativeOpsError, dynamo_metrics
from torch_neuronx.eager import tracking

STEPS = 2
LR = 0.01
RTOL = 1e-3
FLOOR = 1e-3
_STEP_SEED = 1234
MULTIPLIER = 3.0


@dataclass
class Outcome:
    """One model in one mode. `status`: ``pass``, ``fail`` (a mismatch or a device error),
    ``policy_pass`` (compiled: the default compile refuses a graph by the documented compile
    policy, an op in it not native on Neuron, `refused_ops`; with
    ``options={"fallback_execution": True}``, which the error advises, the model matches
    CPU), or ``cpu_error`` (the reference itself failed, crashed its process -- sweep.py tells
    by the phase -- or is not finite: the model is outside the sweep)."""

    model: str
    mode: str  # "eager" or "compiled"
    status: str
    detail: str = ""
    fallbacks: list[str] = field(default_factory=list)
    graph_breaks: int = 0
    graphs: int = 0
    loss_rel: float = 0.0
    grad_rel: float = 0.0
    seconds: float = 0.0  # wall time of the device side (its compile included)
    fp64_judged: bool = False  # passed on the float64 reference's judgement (module doc)
    refused_ops: list[str] = field(default_factory=list)  # ops the compile policy refused

    # the device run's losses and gradients, kept for the float64 judgement (not reported)
    dev: Any = field(default=None, repr=False)
    # the device run's error, kept for the CPU Inductor judgement (not reported)
    error: BaseException | None = field(default=None, repr=False)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("dev")
        out.pop("error")
        return out


def _floating_leaves(out) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out] if out.is_floating_point() else []
    if isinstance(out, dict):  # transformers' ModelOutput is an OrderedDict
        return [t for v in out.values() for t in _floating_leaves(v)]
    if isinstance(out, list | tuple):
        return [t for v in out for t in _floating_leaves(v)]
    return []  # caches and other objects carry no loss


def _projection(shape: torch.Size, index: int) -> torch.Tensor:
    seed = (hash(tuple(shape)) ^ (index * 7919)) & 0x7FFFFFFF
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


class _Loss:
    """sum_i mean(out_i * w_i), the w_i drawn once on CPU and moved to each device."""

    def __init__(self):
        self._weights: dict[tuple, torch.Tensor] = {}

    def __call__(self, out) -> torch.Tensor:
        leaves = _floating_leaves(out)
        if not leaves:
            raise ValueError("the model returned no floating tensor")
        total = None
        for i, t in enumerate(leaves):
            key = (tuple(t.shape), i, t.device.type)
            if key not in self._weights:
                self._weights[key] = _projection(t.shape, i).to(t.device)
            # float64 outputs (the float64 reference run) keep their precision
            dtype = torch.float64 if t.dtype == torch.float64 else torch.float32
            t = t.to(dtype)
            if torch.isinf(t).any():
                # logits masked to -inf by design (Grounding DINO pads its text logits to
                # max_text_len with -inf): the loss reads the other positions; a NaN stays
                t = t.masked_fill(torch.isinf(t).detach(), 0.0)
            term = (t * self._weights[key].to(dtype)).mean()
            total = term if total is None else total + term
        return total


def _forward_kwargs(model: torch.nn.Module) -> dict[str, Any]:
    """`use_cache=False` where the forward takes it: a training step builds no KV cache."""
    params = inspect.signature(model.forward).parameters
    return {"use_cache": False} if "use_cache" in params else {}


def _train(model, forward, batch: dict[str, torch.Tensor]):
    """`STEPS` SGD steps; the loss and a {name: grad} copy (on CPU) of each step."""
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    loss_fn = _Loss()
    losses, grads = [], []
    for step in range(STEPS):
        # Random draws inside the forward (ViTMAE's patch masking, PhiMoE's sparse-mixer router
        # sampling) come from the same stream on every side: torch.manual_seed seeds the CPU and
        # the neuron generators, and the emulated core's generator draws CPU's sequence, as the
        # Dynamo benchmarks reset the RNG before each run they compare.
        torch.manual_seed(_STEP_SEED + step)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(forward(**batch))
        loss.backward()
        losses.append(loss.detach().to("cpu"))
        grads.append(
            {
                n: p.grad.detach().to("cpu")
                for n, p in model.named_parameters()
                if p.grad is not None
            }
        )
        opt.step()
    return losses, grads


def _not_finite(ref) -> str:
    """'' when every loss and gradient of the CPU reference is finite, else the first that is
    not: a reference that diverges (D-FINE's second step is NaN on CPU) cannot judge the device."""
    for step, (loss, grads) in enumerate(zip(*ref)):
        if not torch.isfinite(loss).all():
            return f"CPU reference not finite: step {step} loss {loss.item():g}"
        for name, g in grads.items():
            if not torch.isfinite(g).all():
                return f"CPU reference not finite: step {step} grad {name}"
    return ""


def _compare(ref, dev) -> tuple[str, float, float]:
    """('' or the first mismatch, worst loss difference, worst gradient difference)."""
    ref_losses, ref_grads = ref
    losses, grads = dev
    loss_rel = grad_rel = 0.0
    for step, (a, b) in enumerate(zip(losses, ref_losses)):
        rel = abs(a.item() - b.item()) / max(abs(b.item()), 1e-12)
        if not math.isfinite(a.item()) and not math.isfinite(b.item()):
            rel = 0.0
        loss_rel = max(loss_rel, rel)
        if not rel <= RTOL:
            return f"step {step} loss {a.item():.6g} vs CPU {b.item():.6g}", loss_rel, grad_rel
    for step, (g, r) in enumerate(zip(grads, ref_grads)):
        if set(g) != set(r):
            missing = sorted(set(g) ^ set(r))[:3]
            return f"step {step}: gradients present differ: {missing}", loss_rel, grad_rel
        norms = [t.float().norm().item() for t in r.values()]
        mean_norm = sum(norms) / max(len(norms), 1)
        for name, ref_norm in zip(r, norms):
            err = (g[name].float() - r[name].float()).norm().item()
            rel = err / max(ref_norm, FLOOR * mean_norm, 1e-30)
            grad_rel = max(grad_rel, rel)
            if not rel <= RTOL:
                return f"step {step} grad {name}: rel. error {rel:.3g}", loss_rel, grad_rel
    return "", loss_rel, grad_rel


def _rel_errors(res, base) -> list[list[float]]:
    """Per step: the loss's and every gradient's norm-wise distance from `base`, relative."""
    out = []
    for step, (loss, grads) in enumerate(zip(res[0], res[1])):
        b_loss, b_grads = base[0][step].double(), base[1][step]
        errs = [abs(loss.double().item() - b_loss.item()) / max(abs(b_loss.item()), 1e-12)]
        norms = [t.double().norm().item() for t in b_grads.values()]
        mean_norm = sum(norms) / max(len(norms), 1)
        for (name, r), ref_norm in zip(b_grads.items(), norms):
            err = (grads[name].double() - r.double()).norm().item()
            errs.append(err / max(ref_norm, FLOOR * mean_norm, 1e-30))
        out.append(errs)
    return out


def _fp64_verdict(ref, dev, ref64) -> str:
    """'' when `dev` is within MULTIPLIER x float32 CPU's own distance from float64 (+RTOL/10)
    at every loss and gradient, else the first one that is not."""
    if any(set(g) != set(r) for g, r in zip(dev[1], ref64[1])):
        return "the gradients present differ"
    for step, (d, r) in enumerate(zip(_rel_errors(dev, ref64), _rel_errors(ref, ref64))):
        for i, (d_err, r_err) in enumerate(zip(d, r)):
            if not d_err <= MULTIPLIER * r_err + RTOL / 10:
                what = "loss" if i == 0 else f"grad {list(ref64[1][step])[i - 1]}"
                return (
                    f"step {step} {what}: {d_err:.3g} from float64, CPU float32 {r_err:.3g} "
                    f"(bound x{MULTIPLIER:g})"
                )
    return ""


def _train_fp64(fresh, batch, kwargs):
    """The float64 reference on CPU: None when the model cannot run in float64."""
    try:
        model = copy.deepcopy(fresh).double()
        batch64 = {k: v.double() if v.is_floating_point() else v for k, v in batch.items()}
        return _train(model, lambda **b: model(**b, **kwargs), batch64)
    except Exception:  # noqa: BLE001 - no float64 reference: the float32 verdict stands
        return None


def _root(exc: BaseException) -> BaseException:
    """The root cause of `exc`: Dynamo's BackendCompilerFailed keeps the backend's error as
    inner_exception, others chain it as __cause__."""
    root = exc
    while True:
        inner = getattr(root, "inner_exception", None) or root.__cause__
        if inner is None or inner is root:
            return root
        root = inner


_USER_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def _error(exc: BaseException) -> str:
    """Where a failure comes from: the root cause's type and first message line (a backend
    failure wraps the real error), and the innermost frame that raised it outside torch."""
    root = _root(exc)
    msg = [line for line in str(root).strip().splitlines() if line.strip()]
    head = f"{type(root).__name__}: {msg[0] if msg else ''}"[:300]
    # the backend lists what it could not compile as "  - aten::op: policy ..." lines under
    # a summary line: the operators are the finding, so they join the summary
    items = [line.strip()[2:] for line in msg[1:] if line.strip().startswith("- ")]
    if items:
        head += " " + "; ".join(items)[:300]
    if root is not exc:
        head = f"{type(exc).__name__} <- {head}"
    frames = traceback.extract_tb(root.__traceback__)
    # the innermost frame outside torch (the model's line, or ours), else torch's own
    outside = [(f.filename, f.lineno) for f in frames if "/site-packages/torch/" not in f.filename]
    # Dynamo raises from its own frames and names the model's line under "from user code:"
    user = str(root).partition("from user code:")[2]
    outside += [(file, int(line)) for file, line in _USER_FRAME.findall(user)]
    where = (outside or [(f.filename, f.lineno) for f in frames] or [None])[-1]
    if where is not None:
        path = where[0].split("site-packages/")[-1].split("torch_neuronx/")[-1]
        head += f" [at {path}:{where[1]}]"
    return head


#: the phases `check` names to its `phase` callback before it starts each (the sweep's worker
#: prints them, so a crash that kills it is attributed: sweep.py); a device phase is
#: DEVICE + mode
CPU_REFERENCE, DEVICE, CPU_JUDGE = "cpu reference", "device ", "cpu judge "


def check(
    name: str,
    build: Callable[[], tuple[torch.nn.Module, dict[str, torch.Tensor]]],
    modes: tuple[str, ...] = ("eager", "compiled"),
    device: str = "neuron",
    phase: Callable[[str], None] = lambda _: None,
    on_outcome: Callable[[Outcome], None] = lambda _: None,
) -> list[Outcome]:
    """Trains `build()`'s model on CPU, then on `device` in each of `modes`; one Outcome per
    mode. `build` returns a seeded CPU model and a CPU batch. `phase` is told each phase
    before it starts (CPU_REFERENCE, DEVICE + mode, CPU_JUDGE + mode: the float64 and CPU
    Inductor references that judge a failed mode); `on_outcome` gets each mode's Outcome as
    soon as it is known (the sweep keeps an eager result when the compiled mode then times
    out)."""
    phase(CPU_REFERENCE)
    try:
        model, batch = build()
        fresh = copy.deepcopy(model)  # the initial weights, before the reference trains
        kwargs = _forward_kwargs(model)
        ref = _train(model, lambda **b: model(**b, **kwargs), batch)
    except Exception as exc:  # noqa: BLE001 - any CPU failure takes the model out of the sweep
        return _told(on_outcome, [Outcome(name, mode, "cpu_error", _error(exc)) for mode in modes])
    not_finite = _not_finite(ref)
    if not_finite:  # nothing to compare the device with
        return _told(on_outcome, [Outcome(name, mode, "cpu_error", not_finite) for mode in modes])
    outcomes = []
    ref64: list = []  # computed once, when a mode first needs it
    for mode in modes:
        phase(DEVICE + mode)
        outcome = _check_mode(name, mode, fresh, batch, kwargs, ref, device)
        if outcome.status == "fail" and outcome.dev is not None:
            phase(CPU_JUDGE + mode)
            if not ref64:
                ref64.append(_train_fp64(fresh, batch, kwargs))
            if ref64[0] is not None:
                verdict = _fp64_verdict(ref, outcome.dev, ref64[0])
                if verdict:
                    outcome.detail += f"; against float64: {verdict}"
                else:
                    outcome.status, outcome.fp64_judged = "pass", True
                    outcome.detail = f"passed against float64; float32 bound: {outcome.detail}"
        if outcome.status == "fail" and mode == "compiled":
            phase(CPU_JUDGE + mode)
            if outcome.dev is not None:
                _judge_by_cpu_inductor(outcome, fresh, batch, kwargs)
            elif outcome.error is not None:
                _judge_error_by_cpu_inductor(outcome, fresh, batch, kwargs)
        if outcome.status == "pass" and outcome.refused_ops:
            outcome.status = "policy_pass"
        outcome.dev = outcome.error = None
        outcomes.append(outcome)
        on_outcome(outcome)
    return outcomes


def _told(on_outcome: Callable[[Outcome], None], outcomes: list[Outcome]) -> list[Outcome]:
    for outcome in outcomes:
        on_outcome(outcome)
    return outcomes


def _train_cpu_inductor(fresh, batch, kwargs):
    """The compiled reference: the same steps on CPU under ``torch.compile`` (Inductor), as
    (losses and gradients, None), or (None, the exception) when it cannot compile or run here."""
    try:
        torch._dynamo.reset()
        model = copy.deepcopy(fresh)
        module = torch.compile(model)
        return _train(model, lambda **b: module(**b, **kwargs), batch), None
    except Exception as exc:  # noqa: BLE001 - no compiled reference: the caller says so
        return None, exc
    finally:
        torch._dynamo.reset()


def _signature(exc: BaseException) -> tuple[str, str]:
    """What makes two failures the same one: the root cause's type and whole message, with the
    device's name written as CPU's (fake tensors print a device other than CPU's). Not the first line alone:
    Dynamo's is generic ("RuntimeError when making fake tensor call") and the op's own error
    follows it, so a backend's fake-tensor error would pass for a CPU one."""
    root = _root(exc)
    message = str(root).strip()
    for name in ("neuron:0", "neuron"):
        message = message.replace(name, "cpu")
    # a CPU fake tensor's repr leaves its device out
    return type(root).__name__, message.replace(", device='cpu'", "")


def _judge_error_by_cpu_inductor(outcome: Outcome, fresh, batch, kwargs) -> None:
    """A compiled run that raised is outside the sweep when CPU Inductor raises the same error
    (module doc): the compiled mode has no CPU reference."""
    _, cpu_exc = _train_cpu_inductor(fresh, batch, kwargs)
    if cpu_exc is None:
        outcome.detail += "; CPU Inductor compiles and runs it"
    elif _signature(cpu_exc) != _signature(outcome.error):
        outcome.detail += f"; CPU Inductor fails otherwise: {_error(cpu_exc)}"
    else:
        outcome.status = "cpu_error"
        outcome.detail = (
            f"torch.compile on CPU (Inductor) raises the same: {_error(cpu_exc)}; "
            f"on neuron: {outcome.detail}"
        )


def _judge_by_cpu_inductor(outcome: Outcome, fresh, batch, kwargs) -> None:
    """A compiled run that fails both bounds against CPU eager passes when it matches CPU
    Inductor within the same tolerances (module doc)."""
    ref_c, _ = _train_cpu_inductor(fresh, batch, kwargs)
    if ref_c is None:
        outcome.detail += "; CPU Inductor reference unavailable"
        return
    detail, _, _ = _compare(ref_c, outcome.dev)
    if detail:
        outcome.detail += f"; against CPU Inductor: {detail}"
    else:
        outcome.status = "pass"
        outcome.detail = f"passed against CPU Inductor; CPU eager: {outcome.detail}"


def _device_train(mode, fresh, batch, kwargs, device, options=None):
    """The steps on `device`, eager or compiled (with the backend `options`)."""
    model = copy.deepcopy(fresh).to(device)
    dev_batch = {k: v.to(device) for k, v in batch.items()}
    module = (
        torch.compile(model, backend="neuron", options=options) if mode == "compiled" else model
    )
    return _train(model, lambda **b: module(**b, **kwargs), dev_batch)


def _check_mode(name, mode, fresh, batch, kwargs, ref, device) -> Outcome:
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    dynamo_metrics.reset_dynamo_metrics()
    tracking.clear_op_tracking()
    outcome = Outcome(name, mode, "pass")
    start = time.perf_counter()
    try:
        try:
            dev = _device_train(mode, fresh, batch, kwargs, device)
        except Exception as exc:
            refused = _root(exc)
            if not isinstance(refused, NonNativeOpsError):
                raise
            # refused by the documented compile policy: run it as the error advises, so the
            # sweep still says whether the model trains right with the op's graph eager
            outcome.refused_ops = sorted(set(refused.ops))
            outcome.detail = (
                f"the default compile refuses {', '.join(outcome.refused_ops)} (not native on "
                "Neuron); with options={'fallback_execution': True}: "
            )
            torch._dynamo.reset()
            dynamo_metrics.reset_dynamo_metrics()
            dev = _device_train(mode, fresh, batch, kwargs, device, {"fallback_execution": True})
        detail, outcome.loss_rel, outcome.grad_rel = _compare(ref, dev)
        if detail:
            outcome.status, outcome.dev = "fail", dev
            outcome.detail += detail
        elif outcome.refused_ops:
            records = dynamo_metrics.get_dynamo_metrics()
            eager = sum(r.get("cache") == "fallback" for r in records)
            outcome.detail += f"matches CPU ({eager} of {len(records)} graphs ran eagerly)"
    except Exception as exc:  # noqa: BLE001 - a device failure is this model's result
        outcome.status, outcome.detail, outcome.error = "fail", _error(exc), exc
    outcome.seconds = round(time.perf_counter() - start, 1)
    outcome.fallbacks = sorted(tracking.get_fallback_ops())
    outcome.graph_breaks = sum(torch._dynamo.utils.counters["graph_break"].values())
    outcome.graphs = len(dynamo_metrics.get_dynamo_metrics())
    torch._dynamo.reset()
    return outcome
