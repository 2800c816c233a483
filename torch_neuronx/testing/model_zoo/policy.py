"""The zoo's documented policy: which models are outside the sweep, and why.

A model is outside the sweep when

1. its CPU reference fails (the shrunk config does not build, or the model does not run on
   the synthetic batch on CPU) or is not finite (a NaN loss or gradient: nothing to compare
   the device with): recorded as ``cpu_error`` with CPU's error, by rule, not by name; or
2. it is listed in `EXCLUDED` below, with its reason; or, for one mode only,
3. that mode is listed in `EXCLUDED_MODES`, with its reason (a compiled mode whose compile
   CPU Inductor itself cannot finish within the sweep's limit).

`excluded(model, mode)` is the one place the sweep, its report and its tests ask: an excluded
pair is not run; the sweep records it as ``excluded`` with the reason.

A compiled model whose graph holds an op that is not native on Neuron is refused by the
documented compile policy (docs/compile.md, "Non-native ops"; e.g. the explicit host
fallback `linalg_solve_triangular` of Qwen3-Next's gated delta rule): by rule, not by name,
it is run again with ``options={"fallback_execution": True}`` and reported as
``policy_pass`` when it then matches CPU (train_check.Outcome).

`KNOWN_FAILURES` lists the failures of models inside the sweep that an open issue covers,
with that issue's error: the CI sample marks them xfail(strict=True), so a fix flips them.
"""

from __future__ import annotations

_VIDEO_TRACKER = (
    "no training step to check: its forward runs under @torch.inference_mode() and takes a "
    "stateful inference session (frames and prompts added by its processor), not tensors; "
    "its image model is swept as {}"
)
# "suite:name" -> reason.
EXCLUDED: dict[str, str] = {
    "hf:sam2_video": _VIDEO_TRACKER.format("hf:sam2"),
    "hf:sam3_video": _VIDEO_TRACKER.format("hf:sam3"),
    "hf:sam3_tracker_video": _VIDEO_TRACKER.format("hf:sam3_tracker"),
    "hf:edgetam_video": _VIDEO_TRACKER.format("hf:edgetam"),
    "hf:glm_image_vqmodel": (
        "no forward to train: GlmImageVQVAE has only `encode` (a 1x1 conv and a codebook "
        "lookup), and its own constructor freezes it (`self.eval()`, 'GlmImage's VQ model is "
        "frozen'); GLM-Image's vision and text models are swept as hf:glm_image"
    ),
    # (timm:cpubone_nano was listed here as ill-conditioned until its compiled run was found to
    # differ from CPU Inductor through two backend bugs, fixed: docs/decisions.md, "Model-zoo
    # ill-conditioned model" and the row after it)
}

# ("suite:name", mode) -> reason: one mode of a model outside the sweep.
EXCLUDED_MODES: dict[tuple[str, str], str] = {
    ("hf:funnel", "compiled"): (
        "outside the sweep by its compile time: CPU Inductor (torch.compile's default backend "
        "on CPU tensors, no neuron code) compiles its forward graph in 226 CPU s and had not "
        "finished its backward graph 44 CPU min later (2026-12-03, a 2-core machine), "
        "where the sweep gives a whole model 900 CPU s. backend='neuron' generates its host "
        "code with Inductor and spends the time in the same place (Inductor's index "
        "simplification for the slice-of-reshape views of Funnel's relative-shift attention, "
        "in sympy; py-spy profile). Its eager mode is swept"
    ),
}


def excluded(model: str, mode: str) -> str:
    """Why `model`'s `mode` is outside the sweep by name; '' when it is not."""
    return EXCLUDED.get(model) or EXCLUDED_MODES.get((model, mode), "")


# "suite:name" -> (CPU seconds, why): a model whose check needs more than the sweep's limit
# (`--timeout`, 900 CPU s) because compiling it takes long, not because it is wrong; the
# sweep gives it this limit instead (`limit`).
LONG_LIMITS: dict[str, tuple[float, str]] = {
    "timm:nasnetalarge": (
        3600.0,
        "its compiled check ran out of 900 CPU s; CPU Inductor alone (torch.compile's default "
        "backend on CPU tensors) spends 546 CPU s in-process compiling its training graphs "
        "(forward 170), without its g++ workers (2026-12-03, a 2-core machine)",
    ),
}


def limit(model: str, default: float) -> float:
    """The sweep's CPU-second limit for `model`: `default`, or its LONG_LIMITS entry if longer."""
    return max(default, LONG_LIMITS.get(model, (0.0, ""))[0])


# ("suite:name", mode) -> the reason (the open issue's error).
KNOWN_FAILURES: dict[tuple[str, str], str] = {}
# (timm test_efficientnet compiled was one until the check grew its CPU Inductor judgement:
# see train_check's module doc.)
