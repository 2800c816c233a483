"""The serving-stack term of a time to first token measured through vLLM.

A TTFT published from a vLLM server (LLMPerf or ``vllm bench serve``) holds more than the
prefill graph: the HTTP request, tokenisation and the chat template, the scheduler's step, the
host's dispatch of the graph, the first token streamed back, and any wait the benchmark's
concurrency implies. The model's figure is device time; this term is the rest. It is an
optional line, never added to device time: ``workloads.compared`` adds it only to set a modeled
TTFT beside a published serving-stack one, and the tables print it in their own column.

Two parts:

- ``DISPATCH_S``: one synchronous host dispatch of the prefill graph (measured with vLLM's
  Python on top, [ASYNC] in the hardware table);
- ``PER_REQUEST_S``: everything else per request, **fitted** by the rule of docs/decisions.md
  ("Serving-stack term of a time to first token through vLLM", written before this file): the
  mean over the serving calibration rows of published TTFT - modeled device TTFT - one dispatch.
  Structural effects the sources state are costed as device work first, not fitted: the
  context-encoding bucket a prompt runs in (``Published.bucket``) and a draft model's prefill
  (no row in the set has one). The held-out rows are never read.

The stored value is what ``serving_fit.fit()`` gives (tracing the calibration workloads takes
seconds, too slow for every comparison); tests/perf/test_serving_term.py checks they agree. This
module holds constants only, so ``workloads`` can read it without an import cycle.
"""

from __future__ import annotations

from torch_neuronx.runtime import hardware as hw

#: one synchronous host dispatch of a compiled graph, vLLM's Python on top [ASYNC]
DISPATCH_S = float(hw.SYNC_GRAPH_LAUNCH)

#: per-request serving-stack time beyond the dispatch, seconds: ``serving_fit.fit()["per_request_s"]`` on the
#: one calibration row found (vLLM Neuron's Llama-3.1-8B EAGLE3 tutorial baseline, trn2.48xlarge
#: TP=8, median TTFT 51.07 ms at concurrency 2; ``workload_data.L8_EAGLE3``)
PER_REQUEST_S = 0.027589

#: what the stored term is fitted on and how (printed with every serving comparison)
PROVENANCE = (
    "fitted on 1 calibration row (vLLM Neuron EAGLE3 tutorial, Llama-3.1-8B baseline, "
    "trn2.48xlarge TP=8, median TTFT 51.07 ms at concurrency 2, vLLM V1); no validation row "
    "exists for it (docs/decisions.md, 'Serving-stack term')"
)


def total_s() -> float:
    """The whole serving-stack term of one request's TTFT: dispatch + per-request time."""
    return DISPATCH_S + PER_REQUEST_S


def describe() -> str:
    """The serving column's text for a TTFT compared with the term on."""
    return (
        f"+{DISPATCH_S * 1e3:.3g} ms graph dispatch [ASYNC] + {PER_REQUEST_S * 1e3:.3g} ms per "
        f"request (perf/serving.py, {PROVENANCE}); compared with both on"
    )
