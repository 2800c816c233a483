"""Advice that names the cause and the lever, with the lever's modeled gain (issue 25, item 5).

Two findings about what bounds a step, from the performance model's own costs:

- **launch-bound**: most of the modeled eager step is per-op launch overhead (many small ops:
  an LSTM's 3,600 ops per step). The lever is ``torch.compile(model, backend="neuron")``, which
  runs the ops as kernels of one graph; its gain is the modeled eager step over the modeled
  compiled step of the same ops (the projection's ``compiled_step_s``: each op a kernel, no
  fusion, so a lower bound of what the planner gives a real compiled graph). Dynamo leaves
  ``nn.LSTM``/``GRU``/``RNN`` eager unless ``torch._dynamo.config.allow_rnn`` is set, so the
  finding says so: on the test LSTM (2 layers, 20 time steps) the eager step models at
  20.3 ms and the finding predicts 2.98 ms; compiled as is it models at 20.3 ms too (the LSTM
  stays eager; remeasured 2026-12-03, an earlier 15.5 ms did not reproduce), compiled with
  ``allow_rnn`` at 0.58-0.60 ms (one fused graph).
- **fp32-bound**: float32 matmuls and convolutions take much of the step. TensorE's float32 rate
  is a quarter of its bfloat16 rate (the hardware table's ``tensor_peak``, docs/perf-model.md),
  so ``torch.autocast("neuron", dtype=torch.bfloat16)`` around the forward and loss is the
  lever. Its gain re-costs each float32 TensorE op with bfloat16 operands: compute at the
  bfloat16 rate, half the bytes, the same launch overhead; and adds the casts autocast makes,
  each a kernel of its own (a launch) that reads float32 and writes bfloat16: two per forward
  op (activation and weight), one per backward op (its gradient back to the float32
  parameter's). A backward op is one that runs inside autograd's engine
  (``torch._C._current_graph_task_id() != -1``). Checked against a bf16 autocast run of the
  same model (tests/evaluate/test_advice.py).

And the explanation of a recompilation by its failed guard (Dynamo's own text): what changed
(train/eval, grad mode, a Python number, an input's dtype, rank, size or requires_grad) and
what to do about that particular guard -- not a generic "keep the guarded value constant".

Each finding is a dict: ``kind``, ``text`` (one line for the report: the gain, no times --
the report's times carry likely ranges, the finding's do not), ``modeled_gain`` (the modeled
step over the step with the lever), ``step_s`` and ``step_with_lever_s`` (modeled, on
``profile``)."""

from __future__ import annotations

import math
import re

#: a launch-bound step: launch overhead is at least this share of the modeled eager step ...
LAUNCH_SHARE = 0.5
#: ... and compiling gains at least this factor
LAUNCH_MIN_GAIN = 1.5
#: an fp32-bound step: bf16 autocast gains at least this factor
FP32_MIN_GAIN = 1.2


class Tally:
    """Per-step sums of the recorded costs that the findings need (one per collector step)."""

    __slots__ = ("ops", "op_s", "overhead_s", "fp32_tensor_s", "fp32_saved_s", "fp32_ops")

    def __init__(self):
        self.ops = 0
        self.op_s = 0.0  # modeled seconds of eager ops
        self.overhead_s = 0.0  # their launch overhead
        self.fp32_tensor_s = 0.0  # modeled seconds of float32 TensorE work (ops and kernels)
        self.fp32_saved_s = 0.0  # what the bf16 rate would save of it
        self.fp32_ops = 0

    def add(self, cost, bf16_over_fp32: float, backward: bool | None = None) -> None:
        """Adds one recorded cost (perf.events.Cost) of the target whose TensorE bf16 rate is
        ``bf16_over_fp32`` times its fp32 rate; ``backward``: whether it is a backward op
        (None: asked of autograd now, for a cost recorded as its op runs)."""
        kind = getattr(cost, "kind", "")
        if kind == "op":
            self.ops += 1
            self.op_s += cost.duration
            self.overhead_s += cost.overhead_s
        if _engine(cost) == "tensor" and cost.dtype == "fp32" and kind in ("op", "kernel"):
            if backward is None:
                import torch

                backward = torch._C._current_graph_task_id() != -1
            self.fp32_ops += 1
            self.fp32_tensor_s += cost.duration
            with_bf16 = max(cost.compute_s / bf16_over_fp32, cost.memory_s / 2) + cost.overhead_s
            # the casts: (read 4 + write 2 bytes) per element of the operands they convert
            casts = (
                cost.overhead_s + 0.25 * cost.memory_s
                if backward
                else 2 * cost.overhead_s + 0.75 * cost.memory_s
            )
            self.fp32_saved_s += cost.duration - (with_bf16 + casts)


def _engine(cost) -> str:
    e = getattr(cost, "engine", "")
    return getattr(e, "value", e) or ""


def bf16_over_fp32(core) -> float:
    """TensorE's bfloat16 rate over its float32 rate on ``core`` (4 on Trainium2)."""
    return core.tensor_peak("bf16") / core.tensor_peak("fp32")


#: Dynamo leaves nn.LSTM/GRU/RNN modules eager unless allow_rnn is set (torch 2.13's default):
#: compiling an LSTM model as is kept it launch-bound (modeled 20.3 ms both, tested shapes);
#: with allow_rnn it was one graph (0.58 ms)
RNN_NOTE = (
    "For nn.LSTM/GRU/RNN turn on torch._dynamo.config.allow_rnn first: Dynamo leaves RNN "
    "modules eager by default"
)


def launch_bound(
    ops: float, op_s: float, overhead_s: float, step_s: float, compiled_s: float | None, where: str
) -> dict | None:
    """The launch-bound finding, or None (see the module doc)."""
    if not ops or not op_s or not compiled_s or not step_s:
        return None
    share = overhead_s / op_s
    gain = step_s / compiled_s
    if share < LAUNCH_SHARE or gain < LAUNCH_MIN_GAIN:
        return None
    return {
        "kind": "launch-bound",
        "text": (
            f"launch-bound: {ops:,.0f} ops per step, {share:.0%} of the modeled eager time is "
            f"per-op launch overhead; torch.compile(model, backend='neuron') runs them as one "
            f"graph: modeled {gain:.1f}x faster (each op a kernel of the graph, before "
            f"fusion). {RNN_NOTE}"
        ),
        "modeled_gain": gain,
        "launch_share": share,
        "ops_per_step": ops,
        "step_s": step_s,
        "step_with_lever_s": compiled_s,
        "profile": where,
        "lever": "torch.compile(model, backend='neuron')",
    }


def fp32_bound(
    fp32_ops: float, fp32_s: float, saved_s: float, step_s: float, ratio: float, where: str
) -> dict | None:
    """The fp32-bound finding, or None (see the module doc)."""
    if not fp32_ops or not step_s or saved_s <= 0 or saved_s >= step_s:  # no gain: no finding
        return None
    with_bf16 = step_s - saved_s
    gain = step_s / with_bf16
    if gain < FP32_MIN_GAIN:
        return None
    return {
        "kind": "fp32-bound",
        "text": (
            f"fp32-bound: float32 matmuls/convolutions take {fp32_s / step_s:.0%} of the "
            f"modeled time, and TensorE runs float32 at 1/{ratio:.0f} of its bfloat16 rate; "
            f"torch.autocast('neuron', dtype=torch.bfloat16) around the forward and loss: "
            f"modeled {gain:.1f}x faster, its casts included"
        ),
        "modeled_gain": gain,
        "fp32_share": fp32_s / step_s,
        "step_s": step_s,
        "step_with_lever_s": with_bf16,
        "profile": where,
        "lever": "torch.autocast('neuron', dtype=torch.bfloat16)",
    }


def from_costs(
    costs: list,
    core,
    step_s: float,
    compiled_s: float | None,
    where: str,
    share: float = 1.0,
    backward: list | None = None,
) -> list:
    """The findings of one step given its eager costs (``--fake``: every op of the traced step
    costed on ``core``; ``share``: the part of each op one core runs, 1 / the tensor-parallel
    degree; ``backward``: whether each cost is a backward op), biggest modeled gain first."""
    t = Tally()
    ratio = bf16_over_fp32(core)
    for i, c in enumerate(costs):
        t.add(c, ratio, bool(backward[i]) if backward is not None else False)
    return ranked(
        [
            launch_bound(t.ops, t.op_s * share, t.overhead_s * share, step_s, compiled_s, where),
            fp32_bound(
                t.fp32_ops, t.fp32_tensor_s * share, t.fp32_saved_s * share, step_s, ratio, where
            ),
        ]
    )


def from_steps(steps: list, row: dict | None, core, where: str) -> list:
    """The findings of an instrumented run: the median of its steady steps' tallies (costed on
    the emulated target, ``core``) and that profile's projection ``row``."""
    tallies = [s.advice for s in steps if getattr(s, "advice", None) is not None]
    if not tallies or not row or not row.get("step_s"):
        return []

    def med(attr):
        xs = sorted(getattr(t, attr) for t in tallies)
        return xs[len(xs) // 2]

    step_s = row["step_s"]
    ratio = bf16_over_fp32(core)
    return ranked(
        [
            launch_bound(
                med("ops"),
                med("op_s"),
                med("overhead_s"),
                step_s,
                row.get("compiled_step_s"),
                where,
            ),
            fp32_bound(
                med("fp32_ops"), med("fp32_tensor_s"), med("fp32_saved_s"), step_s, ratio, where
            ),
        ]
    )


def ranked(findings: list) -> list:
    return sorted((f for f in findings if f), key=lambda f: -f["modeled_gain"])


# -- recompilations ---------------------------------------------------------------------------

_ENTRY = re.compile(r"^\d+/\d+:\s*")


def guard_of(reasons: list) -> tuple[str, str]:
    """(guard, source) of the newest failed guard in Dynamo's recompile reasons: the guard's own
    text and the source line Dynamo attached to it ('' when none)."""
    for r in reasons:
        if not _ENTRY.match(r):  # "User stack trace:" and its lines
            continue
        text = _ENTRY.sub("", r)
        guard, _, source = text.partition("  # ")
        return guard.strip(), source.strip()
    return (reasons[0].strip() if reasons else "", "")


def recompile_advice(reasons: list) -> dict:
    """What a recompilation's failed guard says changed, and the fix for that guard."""
    guard, source = guard_of(reasons)
    out = {"guard": guard, "guard_source": source}
    out["explanation"], out["suggestion"] = _explain(guard, reasons)
    return out


def _explain(guard: str, reasons: list) -> tuple[str, str]:
    sizes = []
    for r in reasons:
        m = re.search(r"size mismatch at index (\d+)\. expected (\d+), actual (\d+)", r)
        if m:
            sizes += [int(m.group(2)), int(m.group(3))]
    if sizes:
        bucket = 1 << max(0, math.ceil(math.log2(max(sizes))))
        return (
            f"an input's size changed ({guard})",
            f"pad this dimension to a fixed size (e.g. {bucket}, the next power of two above "
            f"the sizes seen {sorted(set(sizes))}) or bucket it into a few sizes; or mark it "
            "dynamic with torch._dynamo.mark_dynamic",
        )
    m = re.search(r"(\S+)\.training == (True|False)", guard)
    if m:
        mode = "train()" if m.group(2) == "True" else "eval()"
        return (
            f"the module switched between train() and eval(): the graph was compiled in {mode} "
            f"mode (guard {guard})",
            "expected with an evaluation loop: Dynamo keeps one graph per mode and compiles "
            "each once, so this costs one compilation, not one per step; if it recurs every "
            "switch, the cache limit (torch._dynamo.config.cache_size_limit) was reached",
        )
    if "GLOBAL_STATE changed: grad_mode" in guard:
        return (
            "the call ran with autograd on and off (torch.no_grad() / inference_mode, e.g. an "
            f"evaluation loop): guard '{guard}'",
            "expected: one graph per grad mode, each compiled once; nothing to change unless it "
            "recurs (then the cache limit, torch._dynamo.config.cache_size_limit, was reached)",
        )
    if "GLOBAL_STATE changed" in guard:
        return (
            f"global state the graph depends on changed between calls ({guard})",
            "set it once before the loop (autocast, default dtype, grad mode) instead of "
            "toggling it between calls",
        )
    m = re.search(r"tensor '([^']+)' dtype mismatch\. expected (\w+), actual (\w+)", guard)
    if m:
        return (
            f"the input '{m.group(1)}' arrived as {m.group(3)} after {m.group(2)}",
            f"cast '{m.group(1)}' to one dtype before the call: each dtype is its own graph",
        )
    m = re.search(r"tensor '([^']+)' rank mismatch\. expected (\d+), actual (\d+)", guard)
    if m:
        return (
            f"the input '{m.group(1)}' has {m.group(3)} dimensions after {m.group(2)}",
            f"give '{m.group(1)}' one rank (reshape before the call): each rank is its own graph",
        )
    m = re.search(r"tensor '([^']+)' requires_grad mismatch", guard)
    if m:
        return (
            f"the input '{m.group(1)}' changed requires_grad",
            f"pass '{m.group(1)}' with one requires_grad setting (e.g. .detach() it when no "
            "gradient is needed): the backward graph depends on it",
        )
    m = re.search(r"tensor '([^']+)' (stride|device) mismatch", guard)
    if m:
        return (
            f"the input '{m.group(1)}' changed {m.group(2)}",
            f"pass '{m.group(1)}' with one memory layout (.contiguous() or one memory_format) "
            "and on one device",
        )
    m = re.match(r"len\((.+?)\) == (\d+)$", guard)
    if m:
        return (
            f"the length of {m.group(1)} changed (was {m.group(2)})",
            "pass a fixed number of items, or stack them into one tensor",
        )
    m = re.match(r"([A-Za-z_][\w\[\]'\.]*) == (-?[\d.e+-]+|True|False)$", guard)
    if m:
        return (
            f"the Python value {m.group(1)} changed (the graph was compiled for {m.group(2)}): "
            "Dynamo bakes Python numbers into the graph",
            f"pass {m.group(1)} as a tensor (torch.tensor(value, device='neuron')) so that it is "
            "an input of one graph, or keep it fixed",
        )
    if "___check_obj_id" in guard or "ID_MATCH" in guard:
        return (
            f"an object the graph was specialized on was replaced by another ({guard})",
            "reuse the same object (module, function, optimizer) across calls instead of "
            "building a new one each step",
        )
    return (
        f"Dynamo's guard '{guard}' failed: the graph was specialized on that value and this "
        "call changed it",
        f"make '{guard}' hold on every call (it is what this call changed)",
    )
