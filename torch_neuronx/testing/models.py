"""Small, deterministic models and synthetic data for tests, examples and benchmarks.

Everything here is built in code (no downloads) and is deterministic given a seed:
parameters are initialised on the CPU from an explicit ``torch.Generator`` (the
global RNG state is neither read nor advanced) and only then moved to the target
device. Two models built with the same seed are bit-identical whatever device they
end up on, which is what the CPU-vs-neuron comparisons rely on.

Public names:

- :class:`GPTConfig`, :class:`TinyGPT` -- a GPT-style decoder (token + position
  embeddings, causal self-attention via ``F.scaled_dot_product_attention``, GELU MLP,
  pre-LayerNorm, LM head tied to the token embedding).
- :class:`MLP` -- ``Linear(64, 128) -> ReLU -> Linear(128, 10)`` by default.
- :func:`build_tinygpt`, :func:`build_mlp` -- seeded constructors (optionally moved to a
  device).
- :func:`make_batch` -- synthetic token batches ``(idx, targets)`` for TinyGPT.
- :func:`make_mlp_batch` -- synthetic ``(x, y)`` classification batches for MLP.
- :func:`train_tinygpt`, :func:`train_mlp` -- reference training loops that return the
  per-step losses (used by the example, the tests and the benchmark).
- :func:`max_rel_diff` -- elementwise maximum relative difference helper.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

__all__ = [
    "GPTConfig",
    "TinyGPT",
    "MLP",
    "build_tinygpt",
    "build_mlp",
    "make_batch",
    "make_mlp_batch",
    "train_tinygpt",
    "train_mlp",
    "max_rel_diff",
    "sync",
]

DeviceLike = str | torch.device


# --------------------------------------------------------------------------- config


@dataclass(frozen=True)
class GPTConfig:
    """Hyper-parameters of :class:`TinyGPT`. Defaults are tiny (about 28k parameters)
    so a 20-step run takes well under a second on two CPU cores."""

    vocab_size: int = 64
    seq_len: int = 16  # maximum context length (size of the position table)
    d_model: int = 32
    n_heads: int = 2
    n_layers: int = 2
    mlp_ratio: int = 4
    dropout: float = 0.0  # kept at 0 by default: dropout would make CPU/neuron RNG diverge
    layer_norm_eps: float = 1e-5

    def __post_init__(self):
        if self.d_model % self.n_heads != 0:
            raise ValueError(
                f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})"
            )
        for name in ("vocab_size", "seq_len", "d_model", "n_heads", "n_layers", "mlp_ratio"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")

    def to_dict(self) -> dict:
        return asdict(self)


# --------------------------------------------------------------------------- modules


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.n_heads = cfg.n_heads
        self.head_dim = cfg.d_model // cfg.n_heads
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.dropout = cfg.dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        # (B, T, C) -> (B, H, T, D)
        q = q.view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        k = k.view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        v = v.view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        y = F.scaled_dot_product_attention(
            q, k, v, dropout_p=self.dropout if self.training else 0.0, is_causal=True
        )
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.proj(y)


class Block(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.attn = CausalSelfAttention(cfg)
        self.ln2 = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.fc = nn.Linear(cfg.d_model, cfg.mlp_ratio * cfg.d_model)
        self.fc_proj = nn.Linear(cfg.mlp_ratio * cfg.d_model, cfg.d_model)
        self.drop = nn.Dropout(cfg.dropout)

    def mlp(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(self.fc_proj(F.gelu(self.fc(x))))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        x = x + self.mlp(self.ln2(x))
        return x


class TinyGPT(nn.Module):
    """A tiny GPT-2-style language model.

    ``forward(idx, targets=None)`` returns ``(logits, loss)``; ``loss`` is ``None``
    without targets. ``idx`` and ``targets`` are int64 tensors of shape ``(B, T)``
    with ``T <= config.seq_len``.

    ``gradient_checkpointing=True`` wraps every block in
    ``torch.utils.checkpoint.checkpoint(..., use_reentrant=False)``.

    Parameters are initialised deterministically from ``seed`` on the CPU (see module
    docstring); use :meth:`to` / :func:`build_tinygpt` to move the model.
    """

    def __init__(self, config: GPTConfig | None = None, seed: int = 0, **overrides):
        super().__init__()
        if config is None:
            config = GPTConfig(**overrides)
        elif overrides:
            config = GPTConfig(**{**config.to_dict(), **overrides})
        self.config = config
        self.gradient_checkpointing = False
        # The layers' default initialisers draw from the global RNG; fork it so building
        # a model leaves the caller's RNG stream untouched (reset_parameters overwrites
        # every value anyway).
        with torch.random.fork_rng(devices=[]):
            self.tok_emb = nn.Embedding(config.vocab_size, config.d_model)
            self.pos_emb = nn.Embedding(config.seq_len, config.d_model)
            self.drop = nn.Dropout(config.dropout)
            self.blocks = nn.ModuleList([Block(config) for _ in range(config.n_layers)])
            self.ln_f = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
            self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        self.lm_head.weight = self.tok_emb.weight  # weight tying
        self.reset_parameters(seed)

    @torch.no_grad()
    def reset_parameters(self, seed: int = 0) -> None:
        """GPT-2 initialisation (N(0, 0.02), residual projections scaled by
        1/sqrt(2 * n_layers), zero biases, unit LayerNorm), drawn from a private CPU
        generator seeded with ``seed``; the global RNG is untouched."""
        g = torch.Generator(device="cpu").manual_seed(int(seed))
        std = 0.02
        proj_std = std / math.sqrt(2 * self.config.n_layers)
        for name, p in self.named_parameters():  # tied weight is yielded once
            if p.dim() == 1:
                if name.endswith("weight"):  # LayerNorm gain
                    vals = torch.ones(p.shape)
                else:  # every bias
                    vals = torch.zeros(p.shape)
            else:
                s = proj_std if name.endswith(("attn.proj.weight", "fc_proj.weight")) else std
                vals = torch.randn(p.shape, generator=g, dtype=torch.float32) * s
            p.copy_(vals.to(p.dtype))

    def _apply(self, fn, recurse=True):
        # Module.to() keeps shared parameters shared only when it can swap ``.data`` in
        # place (torch._has_compatible_shallow_copy_type), which stock c10 allows between
        # CPU/CUDA-like backends but not for an arbitrary PrivateUse1 backend; otherwise
        # it creates one new Parameter per owning module and silently unties the LM
        # head. The neuron core handles this, but re-tie after every move/cast anyway
        # (as HF's tie_weights does for XLA) so the model is correct on any backend.
        super()._apply(fn, recurse)
        self.lm_head.weight = self.tok_emb.weight
        return self

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def forward(
        self, idx: torch.Tensor, targets: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        B, T = idx.shape
        if T > self.config.seq_len:
            raise ValueError(f"sequence length {T} exceeds config.seq_len {self.config.seq_len}")
        pos = torch.arange(T, device=idx.device)
        x = self.drop(self.tok_emb(idx) + self.pos_emb(pos))
        for block in self.blocks:
            if self.gradient_checkpointing and torch.is_grad_enabled():
                x = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
            else:
                x = block(x)
        x = self.ln_f(x)
        logits = self.lm_head(x)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), targets.reshape(-1))
        return logits, loss


class MLP(nn.Module):
    """``Linear(in, hidden) -> ReLU -> Linear(hidden, out)``; defaults 64 -> 128 -> 10."""

    def __init__(
        self, in_features: int = 64, hidden: int = 128, out_features: int = 10, seed: int = 0
    ):
        super().__init__()
        with torch.random.fork_rng(devices=[]):  # see TinyGPT.__init__
            self.fc1 = nn.Linear(in_features, hidden)
            self.fc2 = nn.Linear(hidden, out_features)
        self.reset_parameters(seed)

    @torch.no_grad()
    def reset_parameters(self, seed: int = 0) -> None:
        """PyTorch's default Linear init (uniform +-1/sqrt(fan_in)) from a private
        generator."""
        g = torch.Generator(device="cpu").manual_seed(int(seed))
        for lin in (self.fc1, self.fc2):
            bound = 1.0 / math.sqrt(lin.in_features)
            for p in (lin.weight, lin.bias):
                vals = (torch.rand(p.shape, generator=g) * 2 - 1) * bound
                p.copy_(vals.to(p.dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.relu(self.fc1(x)))


# --------------------------------------------------------------------------- builders


def build_tinygpt(
    seed: int = 0, device: DeviceLike = "cpu", config: GPTConfig | None = None, **overrides
) -> TinyGPT:
    """A :class:`TinyGPT` initialised from ``seed`` and moved to ``device``."""
    return TinyGPT(config, seed=seed, **overrides).to(device)


def build_mlp(
    seed: int = 0,
    device: DeviceLike = "cpu",
    in_features: int = 64,
    hidden: int = 128,
    out_features: int = 10,
) -> MLP:
    """An :class:`MLP` initialised from ``seed`` and moved to ``device``."""
    return MLP(in_features, hidden, out_features, seed=seed).to(device)


# --------------------------------------------------------------------------- data


def make_batch(
    seed: int,
    batch_size: int = 4,
    seq_len: int | None = None,
    vocab_size: int | None = None,
    device: DeviceLike = "cpu",
    config: GPTConfig | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """A synthetic next-token batch ``(idx, targets)``, both int64 of shape
    ``(batch_size, seq_len)``, deterministic in ``seed`` (private CPU generator).

    Each row is a noisy arithmetic progression modulo ``vocab_size`` (random start and
    stride, ~10% of tokens replaced at random), so there is structure to learn and the
    loss goes down within a few steps. ``targets`` is ``idx`` shifted left by one.
    ``seq_len``/``vocab_size`` default to ``config``'s values (or GPTConfig()'s).
    """
    cfg = config or GPTConfig()
    T = int(seq_len if seq_len is not None else cfg.seq_len)
    V = int(vocab_size if vocab_size is not None else cfg.vocab_size)
    g = torch.Generator(device="cpu").manual_seed(int(seed))
    start = torch.randint(0, V, (batch_size, 1), generator=g)
    stride = torch.randint(1, 4, (batch_size, 1), generator=g)
    seq = (start + stride * torch.arange(T + 1).unsqueeze(0)) % V
    noise_mask = torch.rand(batch_size, T + 1, generator=g) < 0.1
    noise = torch.randint(0, V, (batch_size, T + 1), generator=g)
    seq = torch.where(noise_mask, noise, seq).to(torch.int64)
    idx, targets = seq[:, :-1].contiguous(), seq[:, 1:].contiguous()
    return idx.to(device), targets.to(device)


def make_mlp_batch(
    seed: int,
    batch_size: int = 32,
    in_features: int = 64,
    n_classes: int = 10,
    device: DeviceLike = "cpu",
) -> tuple[torch.Tensor, torch.Tensor]:
    """A synthetic classification batch ``(x, y)``: ``x`` float32 ``(B, in_features)``,
    ``y`` int64 labels given by a fixed random linear teacher (so it is learnable)."""
    g = torch.Generator(device="cpu").manual_seed(int(seed))
    x = torch.randn(batch_size, in_features, generator=g)
    teacher = torch.Generator(device="cpu").manual_seed(1234)
    w = torch.randn(in_features, n_classes, generator=teacher)
    y = (x @ w).argmax(dim=1)
    return x.to(device), y.to(device)


# --------------------------------------------------------------------------- loops


def sync(device: DeviceLike) -> None:
    """Wait for queued work on ``device`` (no-op for CPU / unknown backends)."""
    dev = torch.device(device)
    if dev.type == "cpu":
        return
    mod = getattr(torch, dev.type, None)
    fn = getattr(mod, "synchronize", None)
    if fn is not None:
        fn()


def _make_optimizer(name: str, params: Iterable[torch.nn.Parameter], lr: float, **kw):
    name = name.lower()
    if name == "adamw":
        return torch.optim.AdamW(params, lr=lr, **kw)
    if name == "adam":
        return torch.optim.Adam(params, lr=lr, **kw)
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, **kw)
    raise ValueError(f"unknown optimizer {name!r}")


def train_tinygpt(
    device: DeviceLike = "cpu",
    steps: int = 20,
    seed: int = 0,
    batch_size: int = 4,
    lr: float = 3e-3,
    optimizer: str = "adamw",
    config: GPTConfig | None = None,
    optimizer_kwargs: dict | None = None,
    clip_grad_norm: float | None = None,
    model: TinyGPT | None = None,
) -> list[float]:
    """Train a seeded :class:`TinyGPT` for ``steps`` steps on ``device`` (batch ``i`` is
    ``make_batch(seed * 1000 + i)``) and return the loss of every step as floats.

    Identical arguments on two devices give the same run, so the returned lists can be
    compared directly."""
    cfg = config or GPTConfig()
    if model is None:
        model = build_tinygpt(seed, device, cfg)
    model.train()
    opt = _make_optimizer(optimizer, model.parameters(), lr, **(optimizer_kwargs or {}))
    losses = []
    for i in range(steps):
        idx, tgt = make_batch(seed * 1000 + i, batch_size, config=cfg, device=device)
        opt.zero_grad(set_to_none=True)
        _, loss = model(idx, tgt)
        loss.backward()
        if clip_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip_grad_norm)
        opt.step()
        losses.append(float(loss.detach().to("cpu")))
    return losses


def train_mlp(
    device: DeviceLike = "cpu",
    steps: int = 20,
    seed: int = 0,
    batch_size: int = 32,
    lr: float = 0.05,
    optimizer: str = "sgd",
    optimizer_kwargs: dict | None = None,
) -> list[float]:
    """Train a seeded :class:`MLP` (64 -> 128 -> 10) with cross-entropy; per-step losses."""
    model = build_mlp(seed, device)
    opt = _make_optimizer(optimizer, model.parameters(), lr, **(optimizer_kwargs or {}))
    losses = []
    for i in range(steps):
        x, y = make_mlp_batch(seed * 1000 + i, batch_size, device=device)
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(float(loss.detach().to("cpu")))
    return losses


# --------------------------------------------------------------------------- comparing


def max_rel_diff(
    a: Sequence[float] | torch.Tensor, b: Sequence[float] | torch.Tensor, eps: float = 1e-12
) -> float:
    """``max |a - b| / max(|b|, eps)`` elementwise, computed in float64 on the CPU.
    ``b`` is the reference. Returns ``inf`` if any element is non-finite in only one of
    them or the shapes differ, and 0.0 for empty inputs."""
    ta = torch.as_tensor(
        a.detach().cpu() if isinstance(a, torch.Tensor) else a, dtype=torch.float64
    )
    tb = torch.as_tensor(
        b.detach().cpu() if isinstance(b, torch.Tensor) else b, dtype=torch.float64
    )
    if ta.shape != tb.shape:
        return math.inf
    if ta.numel() == 0:
        return 0.0
    fa, fb = torch.isfinite(ta), torch.isfinite(tb)
    if not torch.equal(fa, fb):
        return math.inf
    both_nonfinite = ~fa
    if both_nonfinite.any() and not torch.equal(ta[both_nonfinite], tb[both_nonfinite]):
        return math.inf  # e.g. +inf vs -inf, or nan (nan != nan)
    ta, tb = ta[fa], tb[fb]
    if ta.numel() == 0:
        return 0.0
    return float(((ta - tb).abs() / tb.abs().clamp_min(eps)).max())
