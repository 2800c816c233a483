"""Published LLM workloads, costed: a decoder layer traced once on fake tensors and planned by
the compiled-graph planner, plus the collectives, sampling and optimizer work the published
configuration implies. ``perf/workload_data.py`` lists the published runs; ``perf/validation.py``
puts the two side by side.

Workloads (transformer layers) are traced once with ``make_fx`` on fake tensors -- the same
ATen graph ``torch.compile`` would hand the backend -- and costed by ``perf/graph.py``. Every
modeling choice the published configuration does not pin down is stated where it is made.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import torch
import torch.nn.functional as F

from torch_neuronx.runtime.engines import Engine

from . import estimate, graph, overlap, params, releases, serving, tails
from .collectives import collective_cost
from .target import Target, for_instance


@dataclasses.dataclass(frozen=True)
class Llama:
    """A decoder-only transformer's shape. Defaults are Llama's; ``hd`` sets a head dimension
    other than hidden / heads (Qwen3), ``gated=False`` is GPT's two-matrix GELU feed-forward
    instead of SwiGLU's three, ``tied`` shares the embedding with the LM head (GPT-3)."""

    hidden: int
    heads: int
    kv_heads: int
    ffn: int
    layers: int
    vocab: int
    hd: int = 0
    gated: bool = True
    tied: bool = False

    @property
    def head_dim(self) -> int:
        return self.hd or self.hidden // self.heads

    @property
    def params(self) -> float:
        d, q, kv = self.hidden, self.heads * self.head_dim, self.kv_heads * self.head_dim
        per_layer = 2 * d * q + 2 * d * kv + (3 if self.gated else 2) * d * self.ffn
        return self.layers * per_layer + (1 if self.tied else 2) * self.vocab * d


#: model shapes from each model's public Hugging Face config.json
MODELS = {
    "Llama-3.1-8B": Llama(4096, 32, 8, 14336, 32, 128256),
    "Llama-3.3-70B": Llama(8192, 64, 8, 28672, 80, 128256),
    "Llama-3.1-70B": Llama(8192, 64, 8, 28672, 80, 128256),
    "Llama-3.1-405B": Llama(16384, 128, 8, 53248, 126, 128256),
    "Llama-3-70B": Llama(8192, 64, 8, 28672, 80, 128256),
    "Llama-2-7b": Llama(4096, 32, 32, 11008, 32, 32000),
    "Llama-2-13b": Llama(5120, 40, 40, 13824, 40, 32000),
    "Llama-2-70b": Llama(8192, 64, 8, 28672, 80, 32000),
    "CodeLlama-13b-hf": Llama(5120, 40, 40, 13824, 40, 32016),
    "Mistral-7B-Instruct-v0.2": Llama(4096, 32, 8, 14336, 32, 32000),
    "Llama-3-8B": Llama(4096, 32, 8, 14336, 32, 128256),
    "Qwen3-32B": Llama(5120, 64, 8, 25600, 64, 151936, hd=128),
    # NeMo Megatron GPT-3 on Trainium (aws-neuron/neuronx-nemo-megatron gpt_23b.sh, gpt_46b.sh,
    # gpt_175b.sh: hidden, layers, heads; FFN 4 x hidden in test.sh; GPT-2 BPE vocabulary;
    # NeMo GPT's default shared input/output embedding). LayerNorm is costed as RMSNorm (one
    # element-wise pass more or less; the matmuls are the same)
    "GPT3-23B": Llama(8192, 64, 64, 32768, 28, 50257, gated=False, tied=True),
    "GPT3-46B": Llama(8192, 64, 64, 32768, 56, 50257, gated=False, tied=True),
    "GPT3-175B": Llama(12288, 96, 96, 49152, 96, 50257, gated=False, tied=True),
}


def _layer(
    x, wq, wk, wv, wo, w1, w3, w2, g1, g2, kcache, vcache, heads, causal, sp, batch=1, gated=True
):
    """One Llama decoder layer's local shard (Megatron tensor parallelism: heads and FFN split).
    ``x`` holds ``batch`` sequences' tokens stacked on its rows (the projections are one matmul
    over all of them; attention is per sequence). With sequence parallelism (``sp`` = TP
    degree > 1) ``x`` holds 1/sp of the tokens: the norms and residual adds run on that shard,
    ``repeat`` stands for the all-gather's local write of the gathered activation and
    ``view(sp, ...).sum(0)`` for the reduce-scatter's local reduction (the transfers themselves
    are costed by the collective model)."""

    def rms(t, g):
        return t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + 1e-5) * g

    def gather(t):
        return t.repeat(sp, 1) if sp > 1 else t

    def scatter(t):
        return t.view(sp, -1, t.shape[-1]).sum(0) if sp > 1 else t

    h = gather(rms(x, g1))
    s = h.shape[0] // batch
    d = wq.shape[1] // heads
    q = (h @ wq).view(batch, s, heads, d).transpose(1, 2)
    k = (h @ wk).view(batch, s, -1, d).transpose(1, 2)
    v = (h @ wv).view(batch, s, -1, d).transpose(1, 2)
    if kcache is not None:  # decode: attend over the cache (rotary embedding is element-wise)
        k, v = kcache, vcache
    a = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
    x = x + scatter(a.transpose(1, 2).reshape(batch * s, -1) @ wo)
    h = gather(rms(x, g2))
    f = F.silu(h @ w1) * (h @ w3) if gated else F.gelu(h @ w1)
    return x + scatter(f @ w2)


@functools.lru_cache(maxsize=64)
def trace_layer(
    m: Llama, tp: int, seq: int, *, train: bool, cache_len: int = 0, batch: int = 1
) -> graph.GraphPlan:
    """Plan of one layer's local shard at tensor-parallel degree ``tp`` (fake tensors: no
    memory is allocated and nothing is computed). Heads that do not divide by ``tp`` are padded
    up to the next multiple (``ceil``), as tensor-parallel inference libraries do; KV heads are
    replicated when ``tp`` exceeds them. ``batch`` > 1 (decode only) stacks the batch's tokens
    on the row dimension (one matmul per projection) and attends each sequence over its own
    cache."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx

    heads = max(1, math.ceil(m.heads / tp))
    kv = max(1, math.ceil(m.kv_heads / tp))
    d = m.head_dim
    ffn = math.ceil(m.ffn / tp)
    sp = tp if train else 1  # training uses sequence parallelism (NxD's default); inference not
    rows = seq * batch
    shapes = [
        (rows // sp, m.hidden),
        (m.hidden, heads * d),
        (m.hidden, kv * d),
        (m.hidden, kv * d),
        (heads * d, m.hidden),
        (m.hidden, ffn),
        (m.hidden, ffn) if m.gated else (1,),  # w3: GPT's feed-forward has none
        (ffn, m.hidden),
        (m.hidden,),
        (m.hidden,),
    ]
    if cache_len:
        shapes += [(batch, kv, cache_len, d)] * 2
    if train:
        shapes += [(rows // sp, m.hidden)]  # the gradient arriving from the next layer
    learned = [i for i in range(10) if m.gated or i != 6]  # GPT: no w3 to differentiate
    with FakeTensorMode():
        args = [
            torch.empty(s, dtype=torch.bfloat16, requires_grad=train and i in learned)
            for i, s in enumerate(shapes)
        ]

    def fn(*a):
        w = a[:10]
        cache = a[10:12] if cache_len else (None, None)
        out = _layer(*w, *cache, heads, cache_len == 0, sp, batch, m.gated)
        return torch.autograd.grad(out, [w[i] for i in learned], a[10]) if train else out

    gm = make_fx(fn, tracing_mode="fake")(*args)
    return graph.plan_graph(gm, f"layer(tp={tp}, seq={seq}, train={train}, batch={batch})")


def layer_time(plan: graph.GraphPlan, tgt: Target) -> float:
    return plan.duration(tgt.core) - params.current().graph_launch_s


def head_time(m: Llama, tp: int, tokens: int, tgt: Target, train: bool) -> float:
    v = math.ceil(m.vocab / tp)
    c = estimate.estimate_op(
        "mm", [(tokens, m.hidden), (m.hidden, v)], torch.bfloat16, tgt, in_graph=True
    )
    return c.duration * (3 if train else 1)


def tp_collectives(m: Llama, tp_ranks: list, tokens: int, tgt: Target, per_layer: int) -> list:
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


@dataclasses.dataclass(frozen=True)
class Training:
    model: str
    instance: str
    nodes: int
    tp: int
    dp: int
    pp: int
    seq: int
    micro_batch: int
    global_batch: int
    zero1: bool = True
    #: full activation checkpointing (NeMo's ``activations_checkpoint_granularity=full``): each
    #: layer's forward, with its blocking tensor-parallel collectives, runs again in the backward
    recompute: bool = False


def training_step(w: Training, release_efficiency: float = 1.0) -> dict:
    """Modeled seconds of one optimizer step and its parts (tensor-parallel layers with
    sequence parallelism, 1F1B pipeline over ``pp`` stages, ZeRO-1 data parallelism).

    - forward TP collectives block (the next matmul needs them); the backward ones overlap the
      backward compute of the same and adjacent layers (``perf/overlap.py``'s rule);
    - a pipeline of ``pp`` stages runs ``M`` micro-batches in ``M + pp - 1`` stage slots
      (1F1B: the fill and drain bubble); a stage holds layers / pp layers and the last one the
      LM head; the activations between stages cross one send/recv per micro-batch each way;
    - the data-parallel sync (reduce-scatter of FP32 gradients, all-gather of BF16 parameters
      of this rank's shard) runs once per step, after the last micro-batch, blocking; the ranks
      of one chip share its links (bytes x cores per chip, the convention of the fit);
    - the AdamW update runs once per step on this rank's 1/dp share (ZeRO-1), HBM-bound:
      FP32 parameter, gradient, m, v read; parameter, m, v written;
    - ``release_efficiency`` (``perf/releases.py``): the device compute -- the layers, the LM
      head, the optimizer -- of a run on an older Neuron SDK release is divided by it; the
      collectives are not."""
    m = MODELS[w.model]
    tgt = for_instance(w.instance)
    tp, dp, pp, mb = w.tp, w.dp, w.pp, w.micro_batch
    plan = trace_layer(m, tp, w.seq * mb, train=True)
    layer = layer_time(plan, tgt) / release_efficiency
    tp_ranks = list(range(tp))
    one = tp_collectives(m, tp_ranks, w.seq * mb, tgt, 4)
    head = head_time(m, tp, w.seq * mb, tgt, True) / release_efficiency
    per_stage = m.layers // pp
    launch = params.current().graph_launch_s
    forwards = 2 if w.recompute else 1
    layer += (forwards - 1) * (1 - BACKWARD_SHARE) * layer
    stage = overlap.step_time(
        per_stage * layer + head + launch,
        blocking_s=forwards * per_stage * sum(one),
        overlapped_s=one * per_stage,
        hideable_s=BACKWARD_SHARE * per_stage * layer,
    )
    micro = w.global_batch // (dp * mb)
    p2p = 0.0
    if pp > 1:
        act = w.seq * mb * m.hidden * 2 // tp  # sequence-parallel activation shard, bf16
        cpi = tgt.cores_per_instance
        # stages sit on different instances when a stage fills one (TP = cores per instance)
        peer = cpi if tp >= cpi else tp
        p2p = 2 * collective_cost("send", act, [0], tgt, peer=peer, in_graph=True).duration
    pipeline = (micro + pp - 1) * (stage + p2p)
    shard = m.params / (tp * pp)
    cpi = tgt.cores_per_instance
    per_inst = max(1, cpi // (tp * pp)) if tp * pp < cpi else 1
    dp_ranks = [(i // per_inst) * max(cpi, tp * pp) + (i % per_inst) * tp * pp for i in range(dp)]
    share = tgt.cores_per_chip
    sync = 0.0
    if dp > 1:
        sync = (
            collective_cost("reduce_scatter", shard * 4 * share, dp_ranks, tgt).duration
            + collective_cost("all_gather", shard * 2 * share, dp_ranks, tgt).duration
        )
    opt_bytes = shard / (dp if w.zero1 else 1) * (4 * 4 + 4 * 3)
    opt = opt_bytes / tgt.core.hbm_bw / release_efficiency
    # micro-batch mode: the pipeline's slots per micro-batch, the optimizer and sync once
    step = overlap.accumulated_step(pipeline / micro, micro, once_s=opt, blocking_s=sync)
    flops = 6 * m.params * w.seq * w.global_batch
    peak = tp * dp * pp * tgt.core.tensor_peak("bf16")
    return {"step_s": step, "mfu": flops / step / peak, "sync_s": sync, "optimizer_s": opt}


@dataclasses.dataclass(frozen=True)
class Bert:
    hidden: int
    heads: int
    ffn: int
    layers: int
    vocab: int

    @property
    def params(self) -> float:
        d = self.hidden
        return self.layers * (4 * d * d + 2 * d * self.ffn) + self.vocab * d


#: Hugging Face bert-large-uncased config.json
BERT_LARGE = Bert(1024, 16, 4096, 24, 30522)


def _bert_layer(x, wqkv, bqkv, wo, bo, w1, b1, w2, b2, g1, be1, g2, be2, heads, seqs, p):
    """One BERT encoder layer as Hugging Face's BertLayer computes it in training: attention
    written out (scores, softmax, dropout, weighted sum: the eager attention the Neuron BERT
    tutorial traces), post-norm, GELU feed-forward, dropout ``p`` after attention and FFN."""
    t, d = x.shape
    s, hd = t // seqs, d // heads
    q, k, v = (x @ wqkv + bqkv).view(seqs, s, 3, heads, hd).permute(2, 0, 3, 1, 4)
    a = torch.softmax(q @ k.transpose(-1, -2) / hd**0.5, dim=-1)
    a = F.dropout(a, p) @ v
    x = F.layer_norm(x + F.dropout(a.transpose(1, 2).reshape(t, d) @ wo + bo, p), (d,), g1, be1)
    f = F.gelu(x @ w1 + b1) @ w2 + b2
    return F.layer_norm(x + F.dropout(f, p), (d,), g2, be2)


@functools.lru_cache(maxsize=8)
def trace_bert_layer(m: Bert, seqs: int, seq: int, dtype_name: str) -> graph.GraphPlan:
    """Plan of one BERT layer's forward and backward for ``seqs`` sequences of ``seq`` tokens."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx

    dt = getattr(torch, dtype_name)
    d, f = m.hidden, m.ffn
    shapes = [(seqs * seq, d), (d, 3 * d), (3 * d,), (d, d), (d,), (d, f), (f,), (f, d), (d,)]
    shapes += [(d,)] * 4 + [(seqs * seq, d)]
    with FakeTensorMode():
        args = [torch.empty(x, dtype=dt, requires_grad=i < 13) for i, x in enumerate(shapes)]

    def fn(*a):
        out = _bert_layer(*a[:13], m.heads, seqs, 0.1)
        return torch.autograd.grad(out, a[:13], a[13])

    gm = make_fx(fn, tracing_mode="fake")(*args)
    return graph.plan_graph(gm, f"bert layer(seqs={seqs}, seq={seq}, {dtype_name})")


@dataclasses.dataclass(frozen=True)
class DataParallel:
    """A data-parallel-only run (every core holds the whole model)."""

    instance: str
    nodes: int
    seq: int
    micro_batch: int
    global_batch: int
    dtype: str  # bfloat16 | float32


def bert_step(w: DataParallel, m: Bert = BERT_LARGE, release_efficiency: float = 1.0) -> dict:
    """Modeled seconds of one BERT pre-training step, data parallel over every core of
    ``nodes`` instances with gradient accumulation: each core runs global_batch / (cores x
    micro_batch) micro-batches of forward + backward (the layers, the masked-LM head over every
    position, as Hugging Face's BertForPreTraining computes it), then one all-reduce of the
    gradients and one optimizer update (LAMB/AdamW: FP32 parameter, gradient, two moments
    read; parameter and moments written), once per step. ``release_efficiency`` divides the
    device compute (layers, head, optimizer), as in ``training_step``."""
    tgt = for_instance(w.instance)
    dt = getattr(torch, w.dtype)
    size = torch.empty((), dtype=dt).element_size()
    cores = w.nodes * tgt.cores_per_instance
    plan = trace_bert_layer(m, w.micro_batch, w.seq, w.dtype)
    tokens = w.micro_batch * w.seq
    head = (
        estimate.estimate_op(
            "mm", [(tokens, m.hidden), (m.hidden, m.vocab)], dt, tgt, in_graph=True
        ).duration
        * 3
    )
    compute = (m.layers * layer_time(plan, tgt) + head) / release_efficiency
    micro = compute + params.current().graph_launch_s
    micro_batches = w.global_batch // (cores * w.micro_batch)
    sync = collective_cost("all_reduce", m.params * size, list(range(cores)), tgt).duration
    opt = m.params * 7 * 4 / tgt.core.hbm_bw / release_efficiency
    step = overlap.accumulated_step(micro, micro_batches, once_s=opt, blocking_s=sync)
    return {"step_s": step, "sync_s": sync, "optimizer_s": opt}


def sampling(m: Llama, ranks: list, tgt: Target, batch: int = 1) -> float:
    """On-device greedy sampling per token: the vocabulary-sharded logits gathered across the
    TP group (bf16) and an argmax over them (NxD Inference and transformers-neuronx sample on
    device; the gather is the collective model's, the argmax a roofline reduction)."""
    gather = collective_cost("all_gather", batch * m.vocab * 2, ranks, tgt, in_graph=True)
    argmax = estimate.estimate_op("amax", [(batch, m.vocab)], torch.bfloat16, tgt, in_graph=True)
    return gather.duration + argmax.duration


def int8_weights(plan: graph.GraphPlan) -> graph.GraphPlan:
    """The same layer with its projection weights stored as int8 (transformers-neuronx's
    weight-only quantization): every matmul kernel reads its weight at one byte per element
    instead of two. The activations, the KV cache and the LM head stay 16-bit. ASSUMPTION: the
    dequantization to bf16 rides on the load into SBUF at no engine cost (not published)."""
    works = []
    for w in plan.works:
        if w.engine == Engine.tensor and w.mm_dims and w.name.split("::")[-1] in ("mm", "addmm"):
            weight = sum(b * k * n for b, _m, k, n in w.mm_dims)  # bf16 elements of (K, N)
            w = dataclasses.replace(w, bytes=max(0.0, w.bytes - weight))
        works.append(w)
    return graph.GraphPlan(plan.name + " int8 weights", tuple(works))


@functools.lru_cache(maxsize=64)
def _decode_plan(m: Llama, tp: int, ctx: int, batch: int, weight_bytes: int) -> graph.GraphPlan:
    plan = trace_layer(m, tp, 1, train=False, cache_len=ctx, batch=batch)
    return int8_weights(plan) if weight_bytes == 1 else plan


def decode_parts(
    m: Llama, tp: int, ctx: int, tgt: Target, batch: int = 1, weight_bytes: int = 2
) -> dict:
    """Modeled seconds per output token, by part: the layers' kernels (weights and KV cache
    over HBM, per-kernel fixed costs), the per-layer tensor-parallel all-reduces (small: their
    fixed cost dominates), the LM head, sampling and one graph launch. ``weight_bytes`` = 1:
    int8-stored layer weights (``int8_weights``)."""
    plan = _decode_plan(m, tp, ctx, batch, weight_bytes)
    ranks = list(range(tp))
    return {
        "layers": m.layers * layer_time(plan, tgt),
        "collectives": m.layers * sum(tp_collectives(m, ranks, batch, tgt, 2)),
        "head": head_time(m, tp, batch, tgt, False),
        "sampling": sampling(m, ranks, tgt, batch),
        "launch": params.current().graph_launch_s,
    }


def prefill_parts(
    m: Llama, tp: int, seq: int, tgt: Target, batch: int = 1, weight_bytes: int = 2
) -> dict:
    """Modeled seconds to the first token of ``batch`` prompts of ``seq`` tokens encoded in one
    pass (their tokens stacked on the rows of each projection, attention per prompt)."""
    plan = trace_layer(m, tp, seq, train=False, batch=batch)
    if weight_bytes == 1:
        plan = int8_weights(plan)
    ranks = list(range(tp))
    return {
        "layers": m.layers * layer_time(plan, tgt),
        "collectives": m.layers * sum(tp_collectives(m, ranks, seq * batch, tgt, 2)),
        "head": head_time(m, tp, batch, tgt, False),
        "sampling": sampling(m, ranks, tgt, batch),
        "launch": params.current().graph_launch_s,
    }


#: optional serving-stack term, never in device time: host dispatch per compiled-graph call in
#: synchronous mode, measured with vLLM's Python on top [ASYNC]; the per-request rest of a
#: TTFT through vLLM is ``perf/serving.py``'s fitted term
SERVING_PER_CALL_S = serving.DISPATCH_S


def predict(row) -> float:
    """The modeled figure of a published row (``workload_data.Published``), in its unit: seq/s
    for training, device milliseconds for decode and prefill (the serving term excluded)."""
    if row.kind == "training":
        # a run of an older Neuron SDK release: its era's release efficiency (perf/releases.py)
        eff = releases.efficiency(getattr(row, "sdk", ""))
        if isinstance(row.training, DataParallel):
            return (
                row.training.global_batch
                / bert_step(row.training, release_efficiency=eff)["step_s"]
            )
        return row.training.global_batch / training_step(row.training, eff)["step_s"]
    m = MODELS[row.model]
    tgt = for_instance(row.instance)
    wb = getattr(row, "weight_bytes", 2)
    if row.kind == "decode":
        return sum(decode_parts(m, row.tp, row.tokens, tgt, row.batch, wb).values()) * 1e3
    # NxD Inference encodes the whole context-encoding bucket the prompt was padded to
    seq = max(row.tokens, getattr(row, "bucket", 0))
    return sum(prefill_parts(m, row.tp, seq, tgt, row.batch, wb).values()) * 1e3


def compared(row, modeled: float) -> float:
    """The modeled figure set against the published one: device time, except a time to first
    token measured through a serving stack, which is compared with the optional serving term
    on (one host dispatch of the prefill graph + the fitted per-request time,
    ``perf/serving.py``). Per-token decode through vLLM stays device time: its asynchronous
    execution hides the per-call dispatch [ASYNC]. A row published as a p99 is compared with
    the median x the tail factor of its kind (``perf/tails.py``)."""
    if row.serving and row.kind == "prefill":
        modeled = modeled + serving.total_s() * 1e3
    # a p99 row: the median times the tail factor fitted on published p50/p99 pairs
    # (perf/tails.py; 1.0 where no usable pair exists, and the table says so)
    return modeled * tails.factor(row.kind, getattr(row, "percentile", "p50"))


def speed_ratio(row, modeled: float | None = None) -> float:
    """modeled speed / published speed (> 1: the model is faster than the published run)."""
    v = compared(row, predict(row) if modeled is None else modeled)
    return v / row.value if row.unit == "seq/s" else row.value / v
