"""Tail factor of serving latencies: what turns the model's median into a published p99.

The model gives a typical (median) device time. Some published serving rows are p99 figures of an
LLMPerf run (the Qwen3-32B Trn2 tutorial keeps p99 only); LLMPerf's p99 is pandas' interpolated
quantile over the run's requests (p99 of 10 requests lies 91% of the way from the 9th to the
slowest). Such a row is compared with ``modeled median x factor``.

Rule (docs/decisions.md, "Tail factor for p99 serving rows", written before this file): the
factor of a kind is fitted on **pairs** only -- published vLLM + LLMPerf runs on Trainium, batch
1, no speculative decoding, not held out, whose log gives p50 and p99 of the same metric
(``inter_token_latency_s`` for decode, ``ttft_s`` for prefill). A pair is usable for a metric only
if its max is within ``USABLE_MAX_OVER_P95`` of its p95 (else its p99 is one cold request, not the
steady tail). Factor = geometric mean of the usable pairs' p99/p50, uncertainty = their range;
no usable pair: no factor (the row is compared as a median and says so). No model output enters
the factor, so the pairs' p50 figures stay validation rows of the median model.
"""

from __future__ import annotations

import dataclasses
import math

#: a pair's p99 measures the steady tail only if the slowest request is within this of its p95
USABLE_MAX_OVER_P95 = 2.0

_SDK = "https://github.com/aws-neuron/aws-neuron-sdk/blob"
L70_LOG = (
    f"{_SDK}/06f3378416cfebaf4413eaa0a95002398ccc6041/libraries/nxd-inference/tutorials/"
    "trn2-llama3.3-70b-tutorial.rst (scenario 1 LLMPerf log, 50 requests)"
)
L405_LOG = (
    f"{_SDK}/2ae3525e66c5051f75efe7ef5905e421aa5dc19c/libraries/nxd-inference/tutorials/"
    "trn2-llama3.1-405b-speculative-tutorial.rst (scenario 1 LLMPerf log, 50 requests)"
)

#: metric of each kind in an LLMPerf log
METRIC = {"decode": "inter_token_latency_s", "prefill": "ttft_s"}


@dataclasses.dataclass(frozen=True)
class Pair:
    """One metric of one published LLMPerf run: its p50, p95, p99 and max, in seconds."""

    run: str
    kind: str  # decode | prefill
    p50: float
    p95: float
    p99: float
    max: float
    source: str

    @property
    def ratio(self) -> float:
        return self.p99 / self.p50

    @property
    def usable(self) -> bool:
        return self.max <= USABLE_MAX_OVER_P95 * self.p95

    @property
    def why(self) -> str:
        if self.usable:
            return "usable"
        return (
            f"not usable: max {self.max:.3g} s is {self.max / self.p95:.0f}x its p95 "
            f"({self.p95:.3g} s), one cold request (our reading: the tutorial sends no warm-up request before LLMPerf)"
        )


#: the published pairs (values as printed in the logs)
PAIRS = (
    Pair("Llama-3.3-70B, Trn2, vLLM", "decode", 0.019832020, 0.019871625, 0.020616846,
         0.021331072, L70_LOG),
    Pair("Llama-3.3-70B, Trn2, vLLM", "prefill", 0.575683706, 0.590262233, 25.081049750,
         48.603518177, L70_LOG),
    Pair("Llama-3.1-405B, Trn2, vLLM", "decode", 0.037929155, 0.038180954, 0.038628800,
         0.038675809, L405_LOG),
    Pair("Llama-3.1-405B, Trn2, vLLM", "prefill", 2.441959391, 2.445114637, 79.229277076,
         153.002108328, L405_LOG),
)  # fmt: skip


def fit(kind: str, pairs=PAIRS) -> dict | None:
    """{"factor", "lo", "hi", "n"} of ``kind`` from its usable pairs, or None when none is."""
    qs = [p.ratio for p in pairs if p.kind == kind and p.usable]
    if not qs:
        return None
    g = math.exp(sum(map(math.log, qs)) / len(qs))
    return {"factor": g, "lo": min(qs), "hi": max(qs), "n": len(qs)}


def unscreened(kind: str, pairs=PAIRS) -> dict:
    """The same fit without the usability test (reported beside it, never applied)."""
    return fit(kind, [dataclasses.replace(p, max=p.p95) for p in pairs])


#: {kind: fit or None}, computed once (published numbers only)
FACTORS: dict = {k: fit(k) for k in METRIC}


def factor(kind: str, percentile: str) -> float:
    """What a modeled median is multiplied by to compare it with a ``percentile`` figure."""
    if percentile == "p50":
        return 1.0
    if percentile != "p99":
        raise ValueError(f"no tail factor for {percentile}: only p50 and p99 rows are published")
    f = FACTORS.get(kind)
    return f["factor"] if f else 1.0


def describe(kind: str, percentile: str) -> str:
    """How a ``percentile`` row of ``kind`` is compared (for the validation table)."""
    if percentile == "p50":
        return ""
    f = FACTORS.get(kind)
    if f is None:
        return (
            f"compared as a median: no usable {METRIC.get(kind, kind)} pair fits a {percentile} "
            "tail factor (perf/tails.py)"
        )
    return (
        f"compared with the modeled median x the {percentile} tail factor {f['factor']:.3f} "
        f"(published p99/p50 of {METRIC[kind]}, {f['n']} runs, {f['lo']:.3f}-{f['hi']:.3f}; "
        "perf/tails.py)"
    )
