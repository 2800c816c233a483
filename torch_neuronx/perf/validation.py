"""The model beside every public reference figure we found (docs/perf-model.md's table).

``python -m torch_neuronx.perf.validation`` prints the table in Markdown. Nothing here ran on a
Trainium: each "modeled" figure is what this model predicts for the same work, computed from
the hardware table; the "published" figure is AWS's (or, where marked, a third party's).

Workloads (transformer layers) are traced once with ``make_fx`` on fake tensors -- the same
ATen graph ``torch.compile`` would hand the backend -- and costed by the compiled-graph planner
(``perf/graph.py``), with the tensor-parallel and data-parallel collectives the published
configuration implies added through the collective model. Every modeling choice the
published configuration does not pin down is stated in the row's note.
"""

from __future__ import annotations

import dataclasses

import torch
import torch.nn.functional as F

from torch_neuronx.runtime import hardware as hw
from torch_neuronx.runtime.engines import Engine

from . import estimate, graph, overlap, params
from .collectives import collective_cost
from .target import Target, for_instance


@dataclasses.dataclass(frozen=True)
class Row:
    anchor: str
    setup: str
    published: float
    modeled: float
    unit: str
    source: str
    note: str = ""

    @property
    def ratio(self) -> float:
        return self.modeled / self.published


# --- chip peaks and bandwidth -------------------------------------------------------------------
_REP = {"trn1": "trn1.32xlarge", "trn2": "trn2.48xlarge", "trn3": "trn3.48xlarge"}


def peak_rows() -> list:
    rows = []
    for gen, inst in _REP.items():
        chip = hw.CHIPS[gen]
        tgt = for_instance(inst, 1)  # one physical core per logical core; x cores per chip
        cores = chip.physical_cores
        for cls, dtype in (
            ("bf16", torch.bfloat16),
            ("fp8", torch.float8_e4m3fn),
            ("fp32", torch.float32),
        ):
            fig = chip.peak.get(cls)
            if fig is None or fig.value is None:
                continue
            c = estimate.estimate_op("mm", [(8192, 8192), (8192, 8192)], dtype, tgt, in_graph=True)
            rows.append(
                Row(
                    f"{chip.chip_name} dense {cls.upper()} peak",
                    f"8192^3 matmul per core x {cores} cores, compiled kernel",
                    fig.value / 1e12,
                    c.flops / c.duration * cores / 1e12,
                    "TFLOP/s",
                    fig.cite(),
                    "the model uses per-core peaks x cores"
                    + ("; chip figure is derived" if fig.kind == "derived" else ""),
                )
            )
        if "mxfp8" in chip.peak:
            from . import events as ev
            from . import roofline

            f = 2.0 * 8192**3
            w = ev.Work(
                "mm",
                ev.KERNEL,
                Engine.tensor,
                flops=f,
                bytes=3 * 8192 * 8192,
                dtype="mxfp8",
                mm_dims=((1, 8192, 8192, 8192),),
            )
            c = roofline.cost_of(w, tgt.core, in_graph=True)
            rows.append(
                Row(
                    f"{chip.chip_name} dense MXFP8 peak",
                    f"8192^3 MXFP8 matmul per core x {cores} cores",
                    chip.peak["mxfp8"].value / 1e12,
                    f / c.duration * cores / 1e12,
                    "TFLOP/s",
                    chip.peak["mxfp8"].cite(),
                    "per-core 315 TFLOPS x 8",
                )
            )
        n = 256 << 20
        c = estimate.estimate_op("add", [(n,), (n,)], torch.bfloat16, tgt, in_graph=True)
        rows.append(
            Row(
                f"{chip.chip_name} HBM bandwidth",
                f"bf16 a+b, 2 x {n >> 20}M elements per core x {cores}",
                chip.hbm_bw.value / 1e9,
                c.bytes / c.duration * cores / 1e9,
                "GB/s",
                chip.hbm_bw.cite(),
                "Trn3: capped by the cores' DMA bandwidth (8 x 528 GB/s [DMA])"
                if gen == "trn3"
                else "",
            )
        )
    return rows


def kernel_rows() -> list:
    tgt = for_instance("trn2.48xlarge", 1)
    c = estimate.estimate_op("mm", [(2048, 2048), (2048, 2048)], torch.bfloat16, tgt, in_graph=True)
    eff = c.flops / c.duration / tgt.core.tensor_peak("bf16")
    return [
        Row(
            "single-kernel efficiency, 2048^3 BF16 NKI matmul",
            "one NeuronCore-v3 (LNC=1), Trn2",
            90.9,
            eff * 100,
            "% of peak",
            "third-party (public NKI kernel-tuning repositories; unverified)",
            "model: ideal tiles + one kernel overhead; no DMA/engine scheduling losses",
        )
    ]


# --- transformer layers, traced ------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Llama:
    hidden: int
    heads: int
    kv_heads: int
    ffn: int
    layers: int
    vocab: int

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def params(self) -> float:
        d, kv = self.hidden, self.kv_heads * self.head_dim
        per_layer = d * d * 2 + 2 * d * kv + 3 * d * self.ffn
        return self.layers * per_layer + 2 * self.vocab * d


LLAMA31_8B = Llama(4096, 32, 8, 14336, 32, 128256)
LLAMA33_70B = Llama(8192, 64, 8, 28672, 80, 128256)
LLAMA31_405B = Llama(16384, 128, 8, 53248, 126, 128256)


def _layer(x, wq, wk, wv, wo, w1, w3, w2, g1, g2, kcache, vcache, heads, causal, sp):
    """One Llama decoder layer's local shard (Megatron tensor parallelism: heads and FFN split).
    With sequence parallelism (``sp`` = TP degree > 1) ``x`` holds 1/sp of the tokens: the
    norms and residual adds run on that shard, ``repeat`` stands for the all-gather's local
    write of the gathered activation and ``view(sp, ...).sum(0)`` for the reduce-scatter's
    local reduction (the transfers themselves are costed by the collective model)."""

    def rms(t, g):
        return t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + 1e-5) * g

    def gather(t):
        return t.repeat(sp, 1) if sp > 1 else t

    def scatter(t):
        return t.view(sp, -1, t.shape[-1]).sum(0) if sp > 1 else t

    h = gather(rms(x, g1))
    s = h.shape[0]
    d = wq.shape[1] // heads
    q = (h @ wq).view(s, heads, d).transpose(0, 1).unsqueeze(0)
    k = (h @ wk).view(s, -1, d).transpose(0, 1).unsqueeze(0)
    v = (h @ wv).view(s, -1, d).transpose(0, 1).unsqueeze(0)
    if (
        kcache is not None
    ):  # decode: attend over the cache (rotary embedding's cost is element-wise, omitted)
        k, v = kcache, vcache
    a = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
    x = x + scatter(a.squeeze(0).transpose(0, 1).reshape(s, -1) @ wo)
    h = gather(rms(x, g2))
    return x + scatter((F.silu(h @ w1) * (h @ w3)) @ w2)


def trace_layer(
    m: Llama, tp: int, seq: int, *, train: bool, cache_len: int = 0, dtype=torch.bfloat16
) -> graph.GraphPlan:
    """Plan of one layer's local shard at tensor-parallel degree ``tp`` (fake tensors: no
    memory is allocated and nothing is computed)."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx

    heads = max(1, m.heads // tp)
    kv = max(1, m.kv_heads // tp)  # KV heads are replicated when tp > kv heads (NxD does so)
    d = m.head_dim
    ffn = m.ffn // tp
    sp = (
        tp if train else 1
    )  # training uses sequence parallelism (NxD's default); inference does not
    shapes = [
        (seq // sp, m.hidden),
        (m.hidden, heads * d),
        (m.hidden, kv * d),
        (m.hidden, kv * d),
        (heads * d, m.hidden),
        (m.hidden, ffn),
        (m.hidden, ffn),
        (ffn, m.hidden),
        (m.hidden,),
        (m.hidden,),
    ]
    if cache_len:
        shapes += [(1, kv, cache_len, d)] * 2
    if train:
        shapes += [(seq // sp, m.hidden)]  # the gradient arriving from the next layer
    with FakeTensorMode():
        args = [
            torch.empty(s, dtype=dtype, requires_grad=train and i < 10)
            for i, s in enumerate(shapes)
        ]

    def fn(*a):
        w = a[:10]
        cache = a[10:12] if cache_len else (None, None)
        out = _layer(*w, *cache, heads, cache_len == 0, sp)
        return torch.autograd.grad(out, w, a[10]) if train else out

    gm = make_fx(fn, tracing_mode="fake")(*args)
    return graph.plan_graph(gm, f"layer(tp={tp}, seq={seq}, train={train})")


def _head_time(m: Llama, tp: int, tokens: int, tgt: Target, train: bool) -> float:
    v = m.vocab // tp
    c = estimate.estimate_op(
        "mm", [(tokens, m.hidden), (m.hidden, v)], torch.bfloat16, tgt, in_graph=True
    )
    return c.duration * (3 if train else 1)


def _tp_collectives(m: Llama, tp_ranks: list, tokens: int, tgt: Target, per_layer: int) -> list:
    """One layer's tensor-parallel collectives, seconds each in issue order. Sequence-parallel
    training: an all-gather before and a reduce-scatter after each of attention and MLP
    (per_layer = 4 forward or 4 backward); sizes are the full activation (tokens x hidden, bf16).
    Inference (no sequence parallelism): ``per_layer`` all-reduces."""
    nbytes = tokens * m.hidden * 2
    if per_layer == 4:
        ag = collective_cost("all_gather", nbytes, tp_ranks, tgt, in_graph=True).duration
        rs = collective_cost("reduce_scatter", nbytes, tp_ranks, tgt, in_graph=True).duration
        return [ag, rs] * 2
    return [
        collective_cost("all_reduce", nbytes, tp_ranks, tgt, in_graph=True).duration
    ] * per_layer


#: ASSUMPTION: a layer's backward is 2/3 of its forward + backward time (backward does twice
#: the forward's matmul FLOPs, the usual 2N + 4N split of 6N FLOPs per token)
BACKWARD_SHARE = 2 / 3


def training_rows() -> list:
    """Llama-3.1-8B pre-training on 32 x trn1.32xlarge (AWS Neuron benchmark table)."""
    m = LLAMA31_8B
    tgt = for_instance("trn1.32xlarge")
    tp, dp, seq, gbs, mb = 32, 32, 8192, 1024, 1
    plan = trace_layer(m, tp, seq, train=True)
    layer = plan.duration(tgt.core) - params.current().graph_launch_s
    tp_ranks = list(range(tp))  # one trn1.32xlarge = 32 NeuronCore-v2
    one = _tp_collectives(m, tp_ranks, seq * mb, tgt, 4)
    head = _head_time(m, tp, seq * mb, tgt, True)
    # forward TP collectives block (the next matmul needs them); the backward ones overlap the
    # backward compute of the same and adjacent layers (perf/overlap.py's rule)
    micro = overlap.step_time(
        m.layers * layer + head + params.current().graph_launch_s,
        blocking_s=m.layers * sum(one),
        overlapped_s=one * m.layers,
        hideable_s=BACKWARD_SHARE * m.layers * layer,
    )
    steps_micro = gbs // (dp * mb)
    # ZeRO-1 data parallelism across the 32 instances: reduce-scatter FP32 gradients, all-gather
    # BF16 parameters of this rank's TP shard; the 32 ranks of an instance share its EFA (the
    # group model gives one chip's EFA to a group; both cores of each chip communicate at once).
    # Both run after the last micro-batch's backward (gradient accumulation): blocking.
    shard = m.params / tp
    dp_ranks = [i * tgt.cores_per_instance for i in range(dp)]
    share = tgt.cores_per_chip
    sync = (
        collective_cost("reduce_scatter", shard * 4 * share, dp_ranks, tgt).duration
        + collective_cost("all_gather", shard * 2 * share, dp_ranks, tgt).duration
    )
    opt_bytes = shard / dp * (4 * 4 + 4 * 3)  # fp32 param, grad, m, v read; param, m, v written
    opt_time = opt_bytes / tgt.core.hbm_bw
    step = overlap.step_time(steps_micro * micro + opt_time, blocking_s=sync)
    modeled = gbs / step
    flops_tok = 6 * m.params
    peak = tp * dp * tgt.core.tensor_peak("bf16")
    mfu = flops_tok * seq * gbs / step / peak
    mfu_pub = flops_tok * seq * 47.95 / peak
    return [
        Row(
            "Llama-3.1-8B pre-training throughput",
            "32 x trn1.32xlarge, TP=32 DP=32 ZeRO-1, seq 8192, "
            "micro-batch 1, global batch 1024, BF16 autocast",
            47.95,
            modeled,
            "seq/s",
            "AWS Neuron Trn1 training performance table (SDK 2.24), "
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/benchmarks/trn1/"
            "trn1-training-performance.html",
            f"MFU (6N FLOPs/token, per-core peaks): modeled {mfu:.0%}, published {mfu_pub:.0%}; "
            "forward TP collectives blocking, backward ones hidden under backward compute but "
            "the last (perf/overlap.py; backward = 2/3 of a layer, assumed); ZeRO-1 sync after "
            "the last micro-batch, blocking; no activation recomputation; attention FLOPs by "
            "PyTorch's rule (not causal-halved)",
        )
    ]


def _decode_tpot(m: Llama, tp: int, ctx: int, tgt: Target) -> float:
    plan = trace_layer(m, tp, 1, train=False, cache_len=ctx)
    layer = plan.duration(tgt.core) - params.current().graph_launch_s
    ranks = list(range(tp))
    return (
        m.layers * (layer + sum(_tp_collectives(m, ranks, 1, tgt, 2)))
        + _head_time(m, tp, 1, tgt, False)
        + _sampling(m, ranks, tgt)
        + params.current().graph_launch_s
    )


def _sampling(m: Llama, ranks: list, tgt: Target) -> float:
    """On-device greedy sampling per token: the vocabulary-sharded logits gathered across the
    TP group (bf16) and an argmax over them (NxD Inference samples on device; the gather is the
    collective model's, the argmax a roofline reduction)."""
    gather = collective_cost("all_gather", m.vocab * 2, ranks, tgt, in_graph=True).duration
    argmax = estimate.estimate_op("amax", [(1, m.vocab)], torch.bfloat16, tgt, in_graph=True)
    return gather + argmax.duration


#: optional serving-stack term, never in device time: host dispatch per compiled-graph call in
#: synchronous mode, measured with vLLM's Python on top [ASYNC]
SERVING_PER_TOKEN_S = float(hw.SYNC_GRAPH_LAUNCH)


def _prefill(m: Llama, tp: int, seq: int, tgt: Target) -> float:
    plan = trace_layer(m, tp, seq, train=False)
    layer = plan.duration(tgt.core) - params.current().graph_launch_s
    ranks = list(range(tp))
    return (
        m.layers * (layer + sum(_tp_collectives(m, ranks, seq, tgt, 2)))
        + _head_time(m, tp, 1, tgt, False)
        + params.current().graph_launch_s
    )


def inference_rows() -> list:
    tgt = for_instance("trn2.48xlarge")  # LNC=2: 64 logical cores
    rows = []
    cases = [
        (
            LLAMA33_70B,
            "Llama-3.3-70B",
            19.6,
            814.0,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/libraries/nxd-inference/tutorials/"
            "trn2-llama3.3-70b-tutorial.html",
        ),
        (
            LLAMA31_405B,
            "Llama-3.1-405B",
            37.9,
            2442.0,
            "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/libraries/nxd-inference/tutorials/"
            "trn2-llama3.1-405b-speculative-tutorial.html",
        ),
    ]
    for m, name, tpot, ttft, src in cases:
        setup = "trn2.48xlarge, TP=64, LNC=2, batch 1, BF16, 10k input / 1.5k output tokens, vLLM"
        rows.append(
            Row(
                f"{name} decode, time per output token (p50)",
                setup,
                tpot,
                _decode_tpot(m, 64, 10000 + 750, tgt) * 1e3,
                "ms",
                src,
                "context 10,750 (mid-generation); weights + KV cache read once per token; "
                "per token: 2 TP all-reduces per layer, on-device sampling, one graph launch; "
                f"serving stack (optional, not in the modeled time): "
                f"+{SERVING_PER_TOKEN_S * 1e3:.3g} ms/token in synchronous mode [ASYNC]",
            )
        )
        rows.append(
            Row(
                f"{name} prefill, time to first token (p50)",
                setup,
                ttft,
                _prefill(m, 64, 10000, tgt) * 1e3,
                "ms",
                src,
                "attention FLOPs by PyTorch's rule (full, not causal-halved)",
            )
        )
    return rows


def all_rows() -> list:
    return peak_rows() + kernel_rows() + training_rows() + inference_rows()


def markdown(rows: list | None = None) -> str:
    rows = all_rows() if rows is None else rows
    out = [
        "| reference | setup | published | modeled | unit | modeled / published | source | note |",
        "|---|---|---:|---:|---|---:|---|---|",
    ]
    for r in rows:
        out.append(
            f"| {r.anchor} | {r.setup} | {r.published:,.4g} | {r.modeled:,.4g} | {r.unit} | "
            f"{r.ratio:.2f} | {r.source} | {r.note} |"
        )
    return "\n".join(out)


def hardware_markdown() -> str:
    """The main figures of each generation side by side, with their sources (docs)."""
    chips = [hw.CHIPS[g] for g in ("trn1", "trn2", "trn3")]

    def cell(fig, scale=1.0, unit=""):
        if fig is None or fig.value is None:
            return "n/a"
        return f"{fig.value / scale:,.4g} {unit} {fig.cite()}".strip()

    rows = [
        ("NeuronCore", [c.core.name for c in chips]),
        (
            "physical cores per chip; LNC allowed (default)",
            [
                f"{c.physical_cores}; {'/'.join(map(str, c.lnc_allowed))} ({int(c.default_lnc.value)}) "
                f"{c.default_lnc.cite()}"
                for c in chips
            ],
        ),
        (
            "TensorE BF16/FP16 per core",
            [cell(c.core.tensor_peak["bf16"], 1e12, "TFLOP/s") for c in chips],
        ),
        (
            "TensorE FP8 per core",
            [cell(c.core.tensor_peak.get("fp8"), 1e12, "TFLOP/s") for c in chips],
        ),
        (
            "TensorE MXFP8 per core",
            [cell(c.core.tensor_peak.get("mxfp8"), 1e12, "TFLOP/s") for c in chips],
        ),
        (
            "TensorE FP32 per core",
            [cell(c.core.tensor_peak["fp32"], 1e12, "TFLOP/s") for c in chips],
        ),
        (
            "TensorE / VectorE / ScalarE / GpSimdE clock",
            [
                f"{c.core.tensor_clock.value / 1e9:g} / {c.core.vector_clock.value / 1e9:g} / "
                f"{c.core.scalar_clock.value / 1e9:g} / {c.core.gpsimd_clock.value / 1e9:g} GHz "
                f"{c.core.vector_clock.cite()}"
                for c in chips
            ],
        ),
        (
            "SBUF / PSUM per core",
            [
                f"{c.core.sbuf.value / 2**20:g} / {c.core.psum.value / 2**20:g} MiB "
                f"{c.core.sbuf.cite()}"
                for c in chips
            ],
        ),
        ("DMA per core", [cell(c.core.dma_bw, 1e9, "GB/s") for c in chips]),
        ("HBM per chip", [cell(c.hbm_capacity, 2**30, "GiB") for c in chips]),
        ("HBM bandwidth per chip", [cell(c.hbm_bw, 1e12, "TB/s") for c in chips]),
        (
            "chip BF16 / FP32 peak (published)",
            [
                f"{c.peak['bf16'].value / 1e12:g} / {c.peak['fp32'].value / 1e12:g} TFLOP/s {c.peak['bf16'].cite()}"
                for c in chips
            ],
        ),
        (
            "NeuronLink per chip (intra-instance)",
            [cell(c.neuronlink_bw, 1e9, "GB/s") for c in chips],
        ),
        ("EFA per chip", [cell(c.efa_bw_per_chip, 1e9, "GB/s") for c in chips]),
        ("host link per chip", [cell(c.host_link_bw, 1e9, "GB/s") for c in chips]),
        (
            "hop latency: cores of a chip / chips / instances",
            [
                f"{c.on_chip_latency.value * 1e6:g} / {c.neuronlink_latency.value * 1e6:g} / "
                f"{c.efa_latency.value * 1e6:g} us (assumption / [INTRA] / [COLL, INTER])"
                for c in chips
            ],
        ),
    ]
    out = [
        "| figure | Trn1 (Trainium) | Trn2 (Trainium2) | Trn3 (Trainium3) |",
        "|---|---|---|---|",
    ]
    out += [f"| {name} | " + " | ".join(vals) + " |" for name, vals in rows]
    out += ["", "| instance | chips | price (USD/h) | price source |", "|---|---:|---:|---|"]
    for inst in hw.INSTANCES.values():
        p = inst.price_usd_per_hour
        out.append(
            f"| {inst.name}{' (emulated profile)' if inst.emulated else ''} | {int(inst.chips.value)} | "
            f"{'none found' if p.value is None else f'{p.value:g}'} | {p.cite()}: {p.note} |"
        )
    return "\n".join(out)


def sources_markdown() -> str:
    return "\n".join(
        ["| key | public source |", "|---|---|"] + [f"| {k} | {v} |" for k, v in hw.SOURCES.items()]
    )


if __name__ == "__main__":  # pragma: no cover
    print(hardware_markdown())
    print()
    print(sources_markdown())
    print()
    print(markdown())
    print()
    from .collective_validation import both_markdown

    print(both_markdown())
    print()
    print(f"(model parameters: {params.current()})")
