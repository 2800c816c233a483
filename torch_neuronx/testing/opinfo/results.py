"""The result of one sample (pass, fail, cpu_error, skip, unsupported) and failure summaries."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from .comparison import error_reason

PASS, FAIL, CPU_ERROR, SKIP = "pass", "fail", "cpu_error", "skip"
# The device raised TorchNeuron's "not supported on the neuron device" error (op policy
# ``unsupported``, e.g. torch.sparse): a documented refusal, not a wrong result. Listed in
# docs/coverage.md, excluded from the pass rates.
UNSUPPORTED = "unsupported"
_UNSUPPORTED_MARKERS = ("not supported on the neuron device",)


def device_error(e: BaseException) -> tuple[str, str, str]:
    """(status, kind, reason) for an exception raised by the device run."""
    msg = str(e)
    if isinstance(e, NotImplementedError) and any(m in msg for m in _UNSUPPORTED_MARKERS):
        return UNSUPPORTED, "unsupported", error_reason(e)
    return FAIL, "error", error_reason(e)


@dataclasses.dataclass
class Result:
    op: str  # op_key
    variant: str  # forward | inplace | out | grad
    dtype: str  # float32, bfloat16, int64, ...
    index: int  # sample index within (op, dtype, requires_grad)
    status: str  # pass | fail | cpu_error | skip
    kind: str = ""  # failure kind (values, dtype, error, ...) or skip/relaxed marker
    reason: str = ""
    sample: str = ""
    relaxed: bool = False
    layout: str = ""  # memory layout the sample was put in (layouts.py); "" as OpInfo gives it

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


def dtype_name(dt) -> str:
    return str(dt).replace("torch.", "")


def summarize_failures(results: Iterable[Result], limit: int = 20) -> str:
    lines = []
    for r in results:
        if r.status == FAIL:
            where = f" {r.layout}" if r.layout else ""
            lines.append(
                f"  {r.op} [{r.variant} {r.dtype} #{r.index}{where}] {r.kind}: {r.reason}"
                f"\n      sample: {r.sample}"
            )
    extra = len(lines) - limit
    lines = lines[:limit]
    if extra > 0:
        lines.append(f"  ... and {extra} more")
    return "\n".join(lines)
