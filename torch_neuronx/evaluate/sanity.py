"""Cross-checks of the report's modeled figures against what physics and arithmetic allow.

A projected step that does more FLOP/s than the core's peak is a bug of the report (a
mis-counted FLOP formula or a missing cost), never a result: the row's figures are withheld
and the error is said. The counted FLOPs are also set beside the usual estimate of a
training step, 6 x parameters x tokens, so that a formula that drops a factor (issue 25: the
convolution forward lost its output's spatial size, 256x low on 16x16) stands out."""

from __future__ import annotations

#: the fields of a projection row that are results (withheld when the row is impossible)
_RESULTS = (
    "step_s",
    "mfu",
    "samples_per_s",
    "tokens_per_s",
    "usd_per_1000_steps",
    "usd_per_million_tokens",
)


def max_peak(core) -> float:
    """The core's highest TensorE FLOP/s over its data types (FP8 above BF16 where it has it)."""
    peaks = getattr(getattr(core, "core", None), "tensor_peak", None)
    if isinstance(peaks, dict) and peaks:
        return max(float(v) for v in peaks.values()) * getattr(core, "lnc", 1)
    return core.tensor_peak("bf16")


def check_row(row: dict, flops: float, core) -> dict:
    """Flags (in place) a projection row whose modeled FLOP/s exceed the core's peak."""
    peak = max_peak(core)
    errors = []
    for key in ("step_s", "compiled_step_s"):
        t = row.get(key)
        if t and flops and flops / t > peak * (1 + 1e-9):
            errors.append(
                f"report error: {key} {t * 1e3:.4g} ms means {flops / t / 1e12:,.1f} TFLOP/s "
                f"per core, above the core's peak {peak / 1e12:,.1f} TFLOP/s: a modeled time or "
                "FLOP count is wrong; not shown as a result"
            )
            row[key] = None
            if key == "step_s":
                for k in _RESULTS:
                    if k in row:
                        row[k] = None
    if errors:
        row["report_error"] = "; ".join(errors)
    return row


def six_nd(flops: float, parameters: int | None, tokens: int | None) -> dict | None:
    """The counted FLOPs per step beside 6 x parameters x tokens (forward 2, backward 4 per
    parameter and token; embeddings and other lookups do less, convolutions reuse each weight
    over the output's positions and do more). None without a parameter count and tokens."""
    if not parameters or not tokens:
        return None
    expected = 6.0 * parameters * tokens
    ratio = flops / expected if expected else None
    out = {
        "parameters": parameters,
        "tokens_per_step": tokens,
        "six_n_d": expected,
        "counted_over_six_n_d": ratio,
    }
    if ratio is not None and (ratio < 0.25 or ratio > 4.0):
        out["note"] = (
            f"the counted FLOPs are {ratio:.2g}x 6 x parameters x tokens: expected near 1 for a "
            "dense transformer (below for embedding-heavy models, above for convolutions); "
            "check --tokens-per-step"
        )
    return out
