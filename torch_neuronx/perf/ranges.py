"""A modeled time's likely range, from the validation errors of its kind of work.

The validation tables (``perf/validation.py``, ``perf/collective_validation.py``) give, per kind
of work, the ratio modeled speed / published speed of every public reference the model never
fitted. A modeled time ``t`` of that kind is then reported as "t, likely lo-hi (modeled)" with

    lo = t x min(1, smallest ratio),   hi = t x max(1, largest ratio)

(a ratio above 1 means the model was faster than the published run, so the real time is
longer). The range says how wrong the model was on the published cases of that kind; it is not
a statistical interval, and kinds with one or two references have wide or one-sided ranges.

Kinds: ``kernel`` (single ops and kernels: the peak, bandwidth and kernel-efficiency rows),
``training``, ``decode``, ``prefill`` (whole workloads), ``collective`` (per generation, the
nccom-test validation set).
"""

from __future__ import annotations

from . import releases

#: {kind: (smallest, largest) speed ratio} of the never-fitted workload rows (validation and held-out), as
#: ``workload_bands()`` computes them (tests/perf/test_ranges.py checks they agree; tracing the
#: workloads takes seconds, too slow for every ``torch-neuronx cost``)
BANDS: dict = {
    "kernel": (0.62, 1.0),
    "training": (0.71, 1.5),
    "decode": (0.73, 1.22),
    "prefill": (0.64, 1.45),
}

KINDS = ("kernel", "training", "decode", "prefill", "collective")

#: the workload sets a band is drawn from: every published row the fit never saw -- the
#: validation set and the held-out set collected after the fit (perf/workload_data.py)
NEVER_FITTED = ("validation", "held-out")


def speed_ratio(row) -> float:
    """modeled speed / published speed of a validation row (time units are inverted)."""
    return 1.0 / row.ratio if row.unit in ("ms", "us", "s") else row.ratio


def workload_bands(rows=None, pairs=None) -> dict:
    """{kind: (min, max) speed ratio}: ``kernel`` from the single-kernel rows
    (``validation.all_rows``), the workload kinds from the **validation** rows of
    ``perf/workload_data.py`` (never the calibration or excluded ones; traces the workloads)."""
    from . import validation, workloads

    rows = validation.all_rows() if rows is None else rows
    pairs = (
        validation.workload_rows(
            validation.workload_data.VALIDATION + validation.workload_data.HELDOUT
        )
        if pairs is None
        else pairs
    )
    out: dict = {}

    def add(kind, s):
        lo, hi = out.get(kind, (s, s))
        out[kind] = (min(lo, s), max(hi, s))

    for r in rows:
        add("kernel", speed_ratio(r))
    for r, v in pairs:
        if r.split in NEVER_FITTED:
            add(r.kind, workloads.speed_ratio(r, v))
    return {k: (round(lo, 2), round(hi, 2)) for k, (lo, hi) in out.items()}


def collective_band(generation: str) -> tuple:
    """(min, max) speed ratio of the nccom-test validation rows of ``generation`` (Trn3, which
    has none, takes Trn2's)."""
    from . import collective_data as data
    from .collective_validation import speed_ratio as ratio

    never = data.VALIDATION + data.HELDOUT
    rs = [ratio(r) for r in never if r.gen == generation] or [
        ratio(r) for r in never if r.gen == "trn2"
    ]
    return (round(min(rs), 2), round(max(rs), 2))


def band(kind: str, generation: str = "trn2") -> tuple:
    if kind == "collective":
        return collective_band(generation)
    if kind not in BANDS:
        raise ValueError(f"unknown kind of work {kind!r}; one of {', '.join(KINDS)}")
    return BANDS[kind]


def likely(seconds: float, kind: str, generation: str = "trn2") -> tuple:
    """(lo, hi) seconds: the range a modeled time of ``kind`` was off by on the published cases."""
    lo, hi = band(kind, generation)
    return (seconds * min(1.0, lo), seconds * max(1.0, hi))


#: what a kind's range does and does not cover: published runs of that kind kept out of its
#: band, and the software release a training range is for, each stated wherever a range of
#: that kind is shown (docs/decisions.md, "Post-hoc exclusions").
#: Keyed by kind, or by (kind, generation) for collectives.
SCOPE: dict = {
    "prefill": (
        "not covered: prompts of >= 4k tokens encoded by transformers-neuronx 2.18's context "
        "encoding measured 2.8-3.8x slower than modeled on Trn1 (published, excluded from the "
        "band); the NxD Inference runs at 10k tokens (Trn2) are within the range"
    ),
    ("collective", "trn2"): (
        "not covered: a second published 16-rank all-reduce series (nccom-test "
        "--show-algorithm) measured 300 us at small sizes, 3x this model's 101 us"
    ),
}
SCOPE[("collective", "trn3")] = SCOPE[("collective", "trn2")]  # Trn3 takes Trn2's constants
#: training: the Neuron SDK release the projection is for (perf/releases.py: runs of SDK <= 2.15
#: were slower; their rows are costed with that era's release efficiency)
SCOPE["training"] = releases.LABEL


def scope(kind: str, generation: str = "trn2") -> str:
    """The stated limit of ``kind``'s range on ``generation`` ("" when none)."""
    return SCOPE.get((kind, generation)) or SCOPE.get(kind, "")


def note(kind: str, generation: str = "trn2") -> str:
    """ "modeled; range from the validation errors of <kind> work" and the kind's scope limit."""
    limit = scope(kind, generation)
    return f"modeled; range from the validation errors of {kind} work" + (
        f"; {limit}" if limit else ""
    )


def _fmt(s: float) -> str:
    if s >= 1:
        return f"{s:.3g} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} us"


def describe(seconds: float, kind: str, generation: str = "trn2") -> str:
    """ "14.2 ms, likely 12-19 ms (modeled; kind: validation range)"."""
    lo, hi = likely(seconds, kind, generation)
    return f"{_fmt(seconds)}, likely {_fmt(lo)} to {_fmt(hi)} ({note(kind, generation)})"


#: the published runs behind each workload kind's band (``BANDS``), as ``validation.all_rows()``
#: gives them: (run, modeled speed / published speed, source). Kept here, like ``BANDS``, so
#: that a report can name them without tracing the workloads; tests/evaluate/test_ranges_shown.py
#: checks both against the validation rows.
BACKING: dict = {
    "kernel": (
        ("Trainium dense BF16 peak", 0.97, "[TRN1]"),
        ("Trainium dense FP8 peak", 0.97, "[TRN1]"),
        ("Trainium dense FP32 peak", 0.97, "[TRN1]"),
        ("Trainium HBM bandwidth", 0.62, "[TRN1, TRN1I]"),
        ("Trainium2 dense BF16 peak", 0.95, "[T2]"),
        ("Trainium2 dense FP8 peak", 0.97, "[T2]"),
        ("Trainium2 dense FP32 peak", 0.88, "[T2]"),
        ("Trainium2 HBM bandwidth", 1.0, "[T2, TRN2I]"),
        ("Trainium3 dense BF16 peak", 0.94, "[T3]"),
        ("Trainium3 dense FP8 peak", 1.0, "derived [T3, SCHEMA]"),
        ("Trainium3 dense FP32 peak", 0.87, "[T3]"),
        ("Trainium3 dense MXFP8 peak", 1.0, "[T3]"),
        ("Trainium3 HBM bandwidth", 0.86, "[T3, TRN3I]"),
        (
            "single-kernel efficiency, 2048^3 BF16 NKI matmul",
            0.71,
            "third-party (public NKI kernel-tuning repositories; unverified)",
        ),
    ),
    "training": (
        (
            "Llama-3.1-70B pre-training throughput, 32 x trn1.32xlarge, TP=32 DP=4 PP=8, seq 8192, micro-batch 1, global batch 1024, BF16 autocast, NxD (SDK 2.24)",
            0.94,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/trn1-training-performance.html",
        ),
        (
            "BERT-Large phase 1 pre-training throughput, 16 x trn1.32xlarge, DP=512, seq 128, micro-batch 8, global batch 1,048,576, FP32, LAMB (SDK 2.28)",
            0.71,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/trn1-training-performance.html",
        ),
        (
            "Llama-2-7b pre-training throughput, 32 x trn1.32xlarge, TP=8 PP=4 (DP=32 read from the cores used), seq 4096, micro-batch 1, global batch 1024, BF16 + stochastic rounding, AdamW, NeMo Megatron (SDK 2.15)",
            1.27,
            "https://github.com/aws-neuron/aws-neuron-sdk/blob/master/about-neuron/benchmarks/trn1/trn1_trn1n_nlp_data.csv",
        ),
        (
            "BERT-Large phase 2 pre-training throughput, 16 x trn1.32xlarge, DP=512, seq 512 (phase 2), micro-batch 2, global batch 524,288, BF16 + stochastic rounding, LAMB (SDK 2.15)",
            1.07,
            "https://github.com/aws-neuron/aws-neuron-sdk/blob/master/about-neuron/benchmarks/trn1/trn1_trn1n_nlp_data.csv",
        ),
        (
            "BERT-Large phase 1 pre-training throughput, 1 x trn1.32xlarge, DP=32, seq 128, micro-batch 16, global batch 65,536, BF16 + stochastic rounding, LAMB (SDK 2.15)",
            0.74,
            "https://github.com/aws-neuron/aws-neuron-sdk/blob/master/about-neuron/benchmarks/trn1/trn1_trn1n_nlp_data.csv",
        ),
        (
            "BERT-Large phase 1 pre-training throughput, 16 x trn1.32xlarge, DP=512, seq 128, micro-batch 16, global batch 16,384, BF16 autocast (AMP), AdamW (SDK 2.14)",
            1.5,
            "https://github.com/aws-neuron/aws-neuron-sdk/blob/master/about-neuron/benchmarks/trn1/trn1_trn1n_nlp_data.csv",
        ),
        (
            "GPT3-23B pre-training throughput, 32 x trn1.32xlarge, TP=8 DP=32 PP=4, seq 2048, micro-batch 1, global batch 1024, BF16 + stochastic rounding, AdamW, NeMo Megatron (SDK 2.15)",
            1.05,
            "https://github.com/aws-neuron/aws-neuron-sdk/blob/master/about-neuron/benchmarks/trn1/trn1_trn1n_nlp_data.csv",
        ),
        (
            "GPT3-46B pre-training throughput, 32 x trn1.32xlarge, TP=8 DP=16 PP=8, seq 2048, micro-batch 1, global batch 1024, BF16 + stochastic rounding, AdamW, NeMo Megatron (SDK 2.15)",
            0.81,
            "https://github.com/aws-neuron/aws-neuron-sdk/blob/master/about-neuron/benchmarks/trn1/trn1_trn1n_nlp_data.csv",
        ),
        (
            "GPT3-175B pre-training throughput, 32 x trn1.32xlarge, TP=32 DP=4 PP=8, seq 2048, micro-batch 1, global batch 1024, BF16 + stochastic rounding, AdamW, NeMo Megatron (SDK 2.13)",
            0.97,
            "https://github.com/aws-neuron/aws-neuron-sdk/blob/master/about-neuron/benchmarks/trn1/trn1_trn1n_nlp_data.csv",
        ),
    ),
    "decode": (
        (
            "Llama-3-70B decode, time per output token (p50), trn1.32xlarge, TP=32, batch 1, BF16, 128 in / 1024 out (seq 1152), transformers-neuronx",
            0.84,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/trn1-inference-performance.html",
        ),
        (
            "Llama-2-7b decode, time per output token (p50), trn1.32xlarge, TP=32, batch 1, BF16, 128 in / 8064 out (seq 8192), transformers-neuronx",
            1.0,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/trn1-inference-performance.html",
        ),
        (
            "Llama-2-13b decode, time per output token (p50), trn1.32xlarge, TP=32, batch 1, BF16, 8192 in / 8192 out (seq 16384), transformers-neuronx",
            1.16,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/trn1-inference-performance.html",
        ),
        (
            "Llama-2-70b decode, time per output token (p50), trn1.32xlarge, TP=32, batch 1, BF16, 256 in / 256 out (seq 512), transformers-neuronx",
            0.87,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/trn1-inference-performance.html",
        ),
        (
            "Llama-2-70b decode, time per output token (p50), trn1.32xlarge, TP=32, batch 1, BF16, 1024 in / 1024 out (seq 2048), transformers-neuronx",
            0.89,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/trn1-inference-performance.html",
        ),
        (
            "Llama-2-70b decode, time per output token (p50), trn1.32xlarge, TP=32, batch 1, BF16, 2048 in / 2048 out (seq 4096), transformers-neuronx",
            0.91,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/trn1-inference-performance.html",
        ),
        (
            "CodeLlama-13b-hf decode, time per output token (p50), trn1.32xlarge, TP=32, batch 1, BF16, 4096 in / 4096 out (seq 8192), transformers-neuronx",
            0.93,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/trn1-inference-performance.html",
        ),
        (
            "Llama-3-70B decode, time per output token (p50), trn1.32xlarge, TP=32, batch 4, BF16, 128 in / 1024 out (seq 1152), transformers-neuronx",
            0.94,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/trn1-inference-performance.html",
        ),
        (
            "Llama-2-7b decode, time per output token (p50), trn1.32xlarge, TP=32, batch 8, BF16, 128 in / 8064 out (seq 8192), transformers-neuronx",
            1.15,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/trn1-inference-performance.html",
        ),
        (
            "Llama-2-13b decode, time per output token (p50), trn1.32xlarge, TP=32, batch 4, BF16, 8192 in / 8192 out (seq 16384), transformers-neuronx",
            1.22,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/trn1-inference-performance.html",
        ),
        (
            "Llama-2-70b decode, time per output token (p50), trn1.32xlarge, TP=32, batch 4, BF16, 256 in / 256 out (seq 512), transformers-neuronx",
            0.9,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/trn1-inference-performance.html",
        ),
        (
            "Llama-2-70b decode, time per output token (p50), trn1.32xlarge, TP=32, batch 4, BF16, 1024 in / 1024 out (seq 2048), transformers-neuronx",
            0.93,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/trn1-inference-performance.html",
        ),
        (
            "Llama-2-70b decode, time per output token (p50), trn1.32xlarge, TP=32, batch 4, BF16, 2048 in / 2048 out (seq 4096), transformers-neuronx",
            1.01,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/trn1-inference-performance.html",
        ),
        (
            "CodeLlama-13b-hf decode, time per output token (p50), trn1.32xlarge, TP=32, batch 8, BF16, 4096 in / 4096 out (seq 8192), transformers-neuronx",
            1.13,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/trn1-inference-performance.html",
        ),
        (
            "Llama-3.3-70B decode, time per output token (p50), trn2.48xlarge, TP=64, LNC=2, batch 1, BF16, 10k input / 1.5k output tokens, vLLM",
            0.91,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/libraries/nxd-inference/tutorials/trn2-llama3.3-70b-tutorial.html",
        ),
        (
            "Llama-3.1-405B decode, time per output token (p50), trn2.48xlarge, TP=64, LNC=2, batch 1, BF16, 10k input / 1.5k output tokens, vLLM",
            0.8,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/libraries/nxd-inference/tutorials/trn2-llama3.1-405b-speculative-tutorial.html",
        ),
        (
            "Llama-3-8B decode, time per output token (p50), trn1.32xlarge, TP=32, batch 1, FP16 compute, int8 weights, 128 in / 8064 out (seq 8192), transformers-neuronx",
            1.13,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/trn1-inference-performance.html",
        ),
        (
            "Llama-3-8B decode, time per output token (p50), trn1.32xlarge, TP=32, batch 1, FP16 compute, int8 weights, 4096 in / 4096 out (seq 8192), transformers-neuronx",
            1.11,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/trn1-inference-performance.html",
        ),
        (
            "Llama-3-8B decode, time per output token (p50), trn1.32xlarge, TP=32, batch 1, FP16 compute, int8 weights, 128 in / 3968 out (seq 4096), transformers-neuronx",
            0.96,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/trn1-inference-performance.html",
        ),
        (
            "Llama-3-8B decode, time per output token (p50), trn1.32xlarge, TP=32, batch 8, FP16 compute, int8 weights, 128 in / 8064 out (seq 8192), transformers-neuronx",
            1.19,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/trn1-inference-performance.html",
        ),
        (
            "Llama-3-8B decode, time per output token (p50), trn1.32xlarge, TP=32, batch 8, FP16 compute, int8 weights, 4096 in / 4096 out (seq 8192), transformers-neuronx",
            1.08,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/trn1-inference-performance.html",
        ),
        (
            "Llama-3-8B decode, time per output token (p50), trn1.32xlarge, TP=32, batch 8, FP16 compute, int8 weights, 128 in / 3968 out (seq 4096), transformers-neuronx",
            1.04,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/trn1-inference-performance.html",
        ),
        (
            "Llama-3.1-8B decode, time per output token (p50), trn2.48xlarge, TP=8, LNC=2, max-num-seqs 2, concurrency 2, BF16, sonnet prompts of at most 512 tokens / 128 output tokens, vLLM V1 (vllm-neuron plugin, SDK >= 2.32), vllm bench serve",
            1.09,
            "https://github.com/aws-neuron/aws-neuron-sdk/blob/a3247f5b8c305f9b70a19993acb306122e736eec/vllm-neuron/docs/tutorials/tutorial-eagle3-speculative-decoding-llama-3-1.md",
        ),
        (
            "Qwen3-32B decode, time per output token (p99), trn2.48xlarge, TP=64, LNC=2, batch 1 (max-num-seqs 1), BF16, 128 input / 512 output tokens, vLLM",
            0.73,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/libraries/nxd-inference/tutorials/sd-inference-tutorial.html",
        ),
    ),
    "prefill": (
        (
            "Llama-3-70B prefill, time to first token (p50), trn1.32xlarge, TP=32, batch 1, BF16, 128 in / 1024 out (seq 1152), transformers-neuronx",
            0.91,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/trn1-inference-performance.html",
        ),
        (
            "Llama-2-7b prefill, time to first token (p50), trn1.32xlarge, TP=32, batch 1, BF16, 128 in / 8064 out (seq 8192), transformers-neuronx",
            1.09,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/trn1-inference-performance.html",
        ),
        (
            "Llama-2-70b prefill, time to first token (p50), trn1.32xlarge, TP=32, batch 1, BF16, 256 in / 256 out (seq 512), transformers-neuronx",
            0.94,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/trn1-inference-performance.html",
        ),
        (
            "Llama-2-70b prefill, time to first token (p50), trn1.32xlarge, TP=32, batch 1, BF16, 1024 in / 1024 out (seq 2048), transformers-neuronx",
            0.79,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/trn1-inference-performance.html",
        ),
        (
            "Llama-2-70b prefill, time to first token (p50), trn1.32xlarge, TP=32, batch 1, BF16, 2048 in / 2048 out (seq 4096), transformers-neuronx",
            1.2,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/trn1-inference-performance.html",
        ),
        (
            "Llama-3-70B prefill, time to first token (p50), trn1.32xlarge, TP=32, batch 4, BF16, 2048 in / 2048 out (seq 4096), transformers-neuronx",
            0.73,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/trn1-inference-performance.html",
        ),
        (
            "Llama-3-70B prefill, time to first token (p50), trn1.32xlarge, TP=32, batch 4, BF16, 128 in / 1024 out (seq 1152), transformers-neuronx",
            0.84,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/trn1-inference-performance.html",
        ),
        (
            "Llama-3-70B prefill, time to first token (p50), trn1.32xlarge, TP=32, batch 4, BF16, 128 in / 128 out (seq 256), transformers-neuronx",
            0.84,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/trn1-inference-performance.html",
        ),
        (
            "Llama-2-7b prefill, time to first token (p50), trn1.32xlarge, TP=32, batch 8, BF16, 128 in / 8064 out (seq 8192), transformers-neuronx",
            1.23,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/trn1-inference-performance.html",
        ),
        (
            "Llama-2-70b prefill, time to first token (p50), trn1.32xlarge, TP=32, batch 4, BF16, 128 in / 128 out (seq 256), transformers-neuronx",
            1.01,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/trn1-inference-performance.html",
        ),
        (
            "Llama-2-70b prefill, time to first token (p50), trn1.32xlarge, TP=32, batch 4, BF16, 256 in / 256 out (seq 512), transformers-neuronx",
            0.92,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/trn1-inference-performance.html",
        ),
        (
            "Llama-2-70b prefill, time to first token (p50), trn1.32xlarge, TP=32, batch 4, BF16, 128 in / 1024 out (seq 1152), transformers-neuronx",
            1.01,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/trn1-inference-performance.html",
        ),
        (
            "Llama-2-70b prefill, time to first token (p50), trn1.32xlarge, TP=32, batch 4, BF16, 1024 in / 1024 out (seq 2048), transformers-neuronx",
            1.3,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/trn1-inference-performance.html",
        ),
        (
            "Llama-2-70b prefill, time to first token (p50), trn1.32xlarge, TP=32, batch 4, BF16, 1024 in / 2048 out (seq 3072), transformers-neuronx",
            1.3,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/trn1-inference-performance.html",
        ),
        (
            "Llama-2-70b prefill, time to first token (p50), trn1.32xlarge, TP=32, batch 4, BF16, 2048 in / 2048 out (seq 4096), transformers-neuronx",
            1.2,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/trn1-inference-performance.html",
        ),
        (
            "Llama-3.3-70B prefill, time to first token (p50), trn2.48xlarge, TP=64, LNC=2, batch 1, BF16, 10k input / 1.5k output tokens, vLLM",
            0.65,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/libraries/nxd-inference/tutorials/trn2-llama3.3-70b-tutorial.html",
        ),
        (
            "Llama-3.1-405B prefill, time to first token (p50), trn2.48xlarge, TP=64, LNC=2, batch 1, BF16, 10k input / 1.5k output tokens, vLLM",
            0.64,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/libraries/nxd-inference/tutorials/trn2-llama3.1-405b-speculative-tutorial.html",
        ),
        (
            "Llama-3-8B prefill, time to first token (p50), trn1.32xlarge, TP=32, batch 1, FP16 compute, int8 weights, 128 in / 8064 out (seq 8192), transformers-neuronx",
            1.45,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/trn1-inference-performance.html",
        ),
        (
            "Llama-3-8B prefill, time to first token (p50), trn1.32xlarge, TP=32, batch 1, FP16 compute, int8 weights, 128 in / 3968 out (seq 4096), transformers-neuronx",
            1.25,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/trn1-inference-performance.html",
        ),
        (
            "Llama-3-8B prefill, time to first token (p50), trn1.32xlarge, TP=32, batch 8, FP16 compute, int8 weights, 128 in / 8064 out (seq 8192), transformers-neuronx",
            1.0,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/trn1-inference-performance.html",
        ),
        (
            "Llama-3-8B prefill, time to first token (p50), trn1.32xlarge, TP=32, batch 8, FP16 compute, int8 weights, 128 in / 3968 out (seq 4096), transformers-neuronx",
            0.89,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/trn1-inference-performance.html",
        ),
        (
            "Qwen3-32B prefill, time to first token (p99), trn2.48xlarge, TP=64, LNC=2, batch 1 (max-num-seqs 1), BF16, 128 input / 512 output tokens, vLLM",
            0.98,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/libraries/nxd-inference/tutorials/sd-inference-tutorial.html",
        ),
    ),
}


def kind_of(anchor: str) -> str:
    """The kind of work of a validation row (as ``workload_bands`` sorts them)."""
    a = anchor.lower()
    return next((k for k in ("training", "decode", "prefill") if k in a), "kernel")


def backing_rows(rows=None, pairs=None) -> dict:
    """``BACKING`` computed from the same rows as ``workload_bands`` (traces the workloads):
    print it to refresh the stored table after the validation set changes."""
    from . import validation, workloads

    rows = validation.all_rows() if rows is None else rows
    pairs = (
        validation.workload_rows(
            validation.workload_data.VALIDATION + validation.workload_data.HELDOUT
        )
        if pairs is None
        else pairs
    )
    out: dict = {}
    for r in rows:
        out.setdefault("kernel", []).append((r.anchor, round(speed_ratio(r), 2), r.source))
    for r, v in pairs:
        if r.split in NEVER_FITTED:
            run = f"{r.anchor}, {r.setup}" if r.setup else r.anchor
            out.setdefault(r.kind, []).append(
                (run, round(workloads.speed_ratio(r, v), 2), r.source)
            )
    return {k: tuple(v) for k, v in out.items()}


def backing(kind: str, generation: str = "trn2") -> list:
    """The published runs a range of ``kind`` comes from: [{run, speed_ratio, source}]
    (collectives: the nccom-test validation rows of ``generation``, Trn2's for Trn3)."""
    if kind == "collective":
        from . import collective_data as data
        from .collective_validation import speed_ratio as ratio

        never = data.VALIDATION + data.HELDOUT
        rows = [r for r in never if r.gen == generation] or [r for r in never if r.gen == "trn2"]
        return [
            {
                "run": f"{r.gen} {r.op}, {r.ranks} ranks, {r.size:,} B ({r.series})",
                "speed_ratio": round(ratio(r), 2),
                "source": "nccom-test (perf/collective_data.py)",
            }
            for r in rows
        ]
    if kind not in BACKING:
        raise ValueError(f"unknown kind of work {kind!r}; one of {', '.join(KINDS)}")
    return [{"run": a, "speed_ratio": s, "source": src} for a, s, src in BACKING[kind]]
