"""A transformers-style decoder block in plain PyTorch (Llama's layout), for benchmarks and
tests: RMSNorm, rotary position embedding, causal scaled-dot-product attention with grouped
query heads, and a SwiGLU MLP. Deterministic given a seed (a private CPU generator), as in
:mod:`torch_neuronx.testing.models`.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

__all__ = ["DecoderBlock", "build_decoder_block", "make_hidden_batch"]


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        var = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(var + self.eps))


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rotary_tables(seq_len: int, head_dim: int, base: float = 10000.0):
    inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    freqs = torch.outer(torch.arange(seq_len, dtype=torch.float32), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


class DecoderBlock(nn.Module):
    def __init__(
        self,
        dim: int = 256,
        n_heads: int = 8,
        n_kv_heads: int = 4,
        ffn: int = 688,
        seq_len: int = 128,
        seed: int = 0,
    ):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = n_heads, n_kv_heads, dim // n_heads
        self.attn_norm, self.mlp_norm = RMSNorm(dim), RMSNorm(dim)
        hd = self.head_dim
        self.q = nn.Linear(dim, n_heads * hd, bias=False)
        self.k = nn.Linear(dim, n_kv_heads * hd, bias=False)
        self.v = nn.Linear(dim, n_kv_heads * hd, bias=False)
        self.o = nn.Linear(n_heads * hd, dim, bias=False)
        self.gate = nn.Linear(dim, ffn, bias=False)
        self.up = nn.Linear(dim, ffn, bias=False)
        self.down = nn.Linear(ffn, dim, bias=False)
        g = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for lin in (self.q, self.k, self.v, self.o, self.gate, self.up, self.down):
                lin.weight.normal_(0.0, 1.0 / math.sqrt(lin.in_features), generator=g)
        cos, sin = rotary_tables(seq_len, hd)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def _rope(self, x: torch.Tensor) -> torch.Tensor:
        T = x.shape[-2]
        return x * self.cos[:T] + _rotate_half(x) * self.sin[:T]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        h = self.attn_norm(x)
        q = self.q(h).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.k(h).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)
        v = self.v(h).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)
        q, k = self._rope(q), self._rope(k)
        rep = self.n_heads // self.n_kv_heads
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(a.transpose(1, 2).reshape(B, T, -1))
        h = self.mlp_norm(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


def build_decoder_block(seed: int = 0, device="cpu", **kw) -> DecoderBlock:
    """A :class:`DecoderBlock` initialised from ``seed`` and moved to ``device``."""
    return DecoderBlock(seed=seed, **kw).to(device)


def make_hidden_batch(
    seed: int, batch_size: int = 2, seq_len: int = 128, dim: int = 256, device="cpu"
):
    """Synthetic hidden states ``(B, T, dim)`` and a regression target of the same shape."""
    g = torch.Generator().manual_seed(int(seed))
    x = torch.randn(batch_size, seq_len, dim, generator=g)
    y = torch.randn(batch_size, seq_len, dim, generator=g)
    return x.to(device), y.to(device)
