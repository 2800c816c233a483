"""Run AWS's public NKI kernels, unmodified, on the emulated NeuronCore and measure the result.

The kernels are not in this repository. Export them first (any checkout of the pinned commits
works; `git archive` of a bare clone is enough)::

    mkdir -p /tmp/nkisrc/samples /tmp/nkisrc/samples_ref /tmp/nkisrc/library
    git -C nki-samples archive 6905a68a122f937e68403727759f035ddd144f95 | tar -x -C /tmp/nkisrc/samples
    git -C nki-samples archive 8370e11ba8d894be5e3c687c0772e7e1e889de4c | tar -x -C /tmp/nkisrc/samples_ref
    git -C nki-library archive d2ad3a579498d1888aa8740af97fd325dd5f2740 | tar -x -C /tmp/nkisrc/library
    python -m torch_neuronx.tools.nki_public_run /tmp/nkisrc [--only ID ...] [--json out.json]

Only the import names are changed, and not in the files: ``neuronxcc.nki`` is made to name
``torch_neuronx.nki.legacy`` (``install_as_neuronxcc``) and ``nki`` to name
``torch_neuronx.nki`` (the 0.2+ API). Each kernel is called with the shapes of the test the
public repository ships beside it (smaller where that test's shape would only cost time), and
compared with that test's own reference where one ships and imports here, else with a
reference written below. Each kernel gets one outcome:

- ``match``: it ran and its outputs are close to the reference;
- ``mismatch``: it ran and an output is not;
- ``named``: it stopped at one of the simulator's named errors (``NkiError``: the construct,
  the kernel line, what to do instead);
- ``other``: any other exception (a gap of the simulator or of this runner).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import importlib.util
import json
import math
import os
import sys
import time
import traceback
from collections.abc import Callable

import numpy as np
import torch

from torch_neuronx import nki as nki_new
from torch_neuronx.nki import errors as nki_errors
from torch_neuronx.nki import legacy
from torch_neuronx.runtime import topology

SAMPLES_COMMIT = "6905a68a122f937e68403727759f035ddd144f95"  # aws-neuron/nki-samples HEAD
SAMPLES_REF_COMMIT = "8370e11ba8d894be5e3c687c0772e7e1e889de4c"  # before "Remove reference kernels"
LIBRARY_COMMIT = "d2ad3a579498d1888aa8740af97fd325dd5f2740"  # aws-neuron/nki-library HEAD

TUT = "samples/src/nki_samples/tutorials"
REF = "samples_ref/src/nki_samples/reference"
LIB = "library/src/nkilib_src/nkilib/core"


@dataclasses.dataclass
class Case:
    id: str
    repo: str  # "nki-samples@HEAD", "nki-samples@reference", "nki-library"
    path: str  # file under the export root
    kernel: str
    api: str  # "0.2+" or "old" (neuronxcc.nki)
    run: Callable  # (loader) -> list of (name, output, reference, atol, rtol)
    reference: str  # where the reference comes from
    instance: str = ""  # an emulated instance the kernel targets (platform_target="trn3")


def install_import_names() -> None:
    """``neuronxcc.nki`` -> the old language, ``nki`` -> the 0.2+ API."""
    legacy.install_as_neuronxcc()
    sys.modules["nki"] = nki_new
    for sub in ("language", "isa", "typing", "collectives"):
        sys.modules["nki." + sub] = importlib.import_module("torch_neuronx.nki." + sub)


class Loader:
    """Imports a public file by path (its folder first on sys.path for sibling imports)."""

    def __init__(self, root: str):
        self.root = root
        self._n = 0

    def file(self, rel: str):
        path = os.path.join(self.root, rel)
        folder = os.path.dirname(path)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        self._n += 1
        name = f"nkipub_{self._n}_{os.path.splitext(os.path.basename(path))[0]}"
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
        return mod

    def package(self, src: str, name: str):
        """Import ``name`` from a package root (relative imports inside it)."""
        path = os.path.join(self.root, src)
        if path not in sys.path:
            sys.path.insert(0, path)
        return importlib.import_module(name)


def dev(x, dtype=None):
    t = torch.as_tensor(np.ascontiguousarray(x)) if isinstance(x, np.ndarray) else x
    if dtype is not None:
        t = t.to(dtype)
    return t.to("neuron")


def host(t) -> torch.Tensor:
    return (
        t.cpu().float() if isinstance(t, torch.Tensor) else torch.as_tensor(np.asarray(t)).float()
    )


def _rand(*shape, lo=-1.0, hi=1.0, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(*shape, generator=g) * (hi - lo) + lo


# ---------------------------------------------------------------- nki-samples tutorials (HEAD)


def _tensor_add(path, fn):
    def run(load):
        mod = load.file(path)
        a, b = _rand(256, 1024).bfloat16(), _rand(256, 1024, seed=1).bfloat16()
        out = getattr(mod, fn)(dev(a), dev(b))
        return [("out", out, a.float() + b.float(), 1e-2, 1e-2)]

    return run


def _transpose2d(load):
    mod = load.file(f"{TUT}/transpose2d/transpose2d_nki_kernels.py")
    P, X, Y = 5, 3, 4
    a = torch.arange(P * X * Y, dtype=torch.int8).reshape(P, X * Y)
    out = mod.tensor_transpose2D_kernel_(dev(a), (X, Y))
    ref = a.reshape(P, X, Y).transpose(1, 2).reshape(P, X * Y)
    return [("out", out, ref.float(), 0, 0)]


def _avgpool(load):
    mod = load.file(f"{TUT}/average_pool2d/average_pool2d_nki_kernels.py")
    C, H, W, pool = 2, 6, 4, 2
    x = torch.arange(C * H * W, dtype=torch.bfloat16).reshape(C, H, W)
    out = mod.tensor_avgpool_kernel(dev(x), pool)
    ref = torch.nn.functional.avg_pool2d(x.float()[None], pool)[0]
    return [("out", out, ref, 1e-2, 1e-2)]


def _matmul(fn, M, K, N):
    def run(load):
        mod = load.file(f"{TUT}/matrix_multiplication/matrix_multiplication_nki_kernels.py")
        lhs = _rand(M, K, lo=0).bfloat16()
        rhs = _rand(K, N, lo=0, seed=1).bfloat16()
        out = getattr(mod, fn)(dev(lhs.T.contiguous()), dev(rhs))
        return [("out", out, lhs.float() @ rhs.float(), 1e-2, 1e-2)]

    return run


def _mamba_reference(delta, u, A, B, C):
    """Mamba's selective scan, as mamba_torch.py states it (that file imports torch_xla at the
    top, so it is not imported here): h_t = exp(delta_t A) h_{t-1} + delta_t B_t u_t, summed
    against C_t over the state."""
    dA = torch.exp(delta[:, :, None, :] * A[None, :, :, None])
    dBu = delta[:, :, None, :] * B[:, None, :, :] * u[:, :, None, :]
    h = torch.zeros_like(dA[..., 0])
    hs = []
    for t in range(dA.shape[-1]):
        h = dA[..., t] * h + dBu[..., t]
        hs.append(h)
    return (C[:, None, :, :] * torch.stack(hs, -1)).sum(dim=-2)


def _mamba(fn):
    def run(load):
        mod = load.file(f"{TUT}/fused_mamba/mamba_nki_kernels.py")
        batch, channels, state, seq = 1, 256, 16, 512
        delta = _rand(batch, channels, seq, lo=0.0, hi=0.1)
        u = _rand(batch, channels, seq, seed=1)
        A = -_rand(channels, state, lo=0.5, hi=1.5, seed=2)
        B = _rand(batch, state, seq, seed=3)
        C = _rand(batch, state, seq, seed=4)
        out = getattr(mod, fn)(dev(delta), dev(u), dev(A), dev(B), dev(C))
        return [("out", out, _mamba_reference(delta, u, A, B, C), 1e-3, 1e-3)]

    return run


def _attn_tutorial(fn, seqlen):
    def run(load):
        mod = load.file(f"{TUT}/attention_fwd_performance/attention_kernels.py")
        d = 128
        q, k, v = (_rand(d, seqlen, seed=s) for s in range(3))
        out = getattr(mod, fn)(dev(q), dev(k), dev(v))
        # the tutorial's numpy_attention: softmax(q^T k) v^T, shape (seqlen, d)
        ref = torch.softmax(q.T @ k, dim=1) @ v.T
        return [("out", out, ref, 1e-2, 1e-2)]

    return run


def _mx_copy_strided(use_tensor_copy):
    def run(load):
        mod = load.file(f"{TUT}/mxfp-matmul/mx_kernels.py")
        import torch_neuronx.nki.language as nl

        K, M, N = 512, 128, 512
        # values on the fp8 e5m2 grid within an MX block's range, so quantisation is exact
        st = (
            torch.randint(-4, 5, (K, M), generator=torch.Generator().manual_seed(0)) * 0.25
        ).float()
        mv = (
            torch.randint(-4, 5, (K, N), generator=torch.Generator().manual_seed(1)) * 0.25
        ).float()
        out = mod.kernel_copy_strided_quantize_matmul_mx(
            dev(st, torch.bfloat16), dev(mv, torch.bfloat16), nl.float8_e5m2_x4, use_tensor_copy
        )
        return [("out", out, st.T @ mv, 5e-2, 5e-2)]

    return run


# ------------------------------------------------- nki-samples reference kernels (8370e11)


def _ref_test(load, name):
    return load.package("samples_ref/test/unit", name)


def _flash_fwd(load):
    load.package("samples_ref/src", "nki_samples")
    from nki_samples.reference.attention import FlashConfig, flash_fwd

    t = _ref_test(load, "test_flash_attn_fwd")
    bs, nheads, seqlen, d = 1, 1, 1024, 128
    rs = np.random.RandomState(0)
    q = ((rs.random_sample([bs, nheads, d, seqlen]) - 0.5) * 2).astype(np.float32)
    k = ((rs.random_sample([bs, nheads, d, seqlen]) - 0.5) * 2).astype(np.float32)
    v = ((rs.random_sample([bs, nheads, seqlen, d]) - 0.5) * 2).astype(np.float32)
    o_gold, neg_max, sum_recip = t.cpu_attention_forward(
        q, k, v.transpose(0, 1, 3, 2), use_causal_mask=True, mixed_precision=True
    )
    o_gold = o_gold.transpose(0, 1, 3, 2)
    P = 128
    neg_max = neg_max.reshape(bs, nheads, seqlen // P, P).transpose(0, 1, 3, 2)
    sum_recip = sum_recip.reshape(bs, nheads, seqlen // P, P).transpose(0, 1, 3, 2)
    lse_gold = -1.0 * (neg_max + np.log(sum_recip))
    cfg = FlashConfig(seq_tile_size=1024, training=True, should_transpose_v=False)
    o, lse = flash_fwd[bs, nheads](
        dev(q), dev(k), dev(v), None, use_causal_mask=True, mixed_precision=True, config=cfg
    )
    return [
        ("o", o, torch.from_numpy(o_gold), 1e-2, 0),
        ("lse", lse, torch.from_numpy(lse_gold), 1e-2, 0),
    ]


def _flash_bwd(load):
    load.package("samples_ref/src", "nki_samples")
    from nki_samples.reference.attention import flash_attn_bwd

    t = _ref_test(load, "test_flash_attn_bwd")
    bs, nheads, seqlen, d = 1, 1, 512, 128
    rs = np.random.RandomState(0)
    q, k, v, dy = (
        ((rs.random_sample([bs, nheads, d, seqlen]) - 0.5) * 2).astype(np.float32) for _ in range(4)
    )
    dq_g, dk_g, dv_g, neg_max, sum_recip, o_proj, _ = t.cpu_attention_backward(
        q, k, v, dy, use_causal_mask=True
    )
    P = 128
    neg_max = neg_max.reshape(bs, nheads, seqlen // P, P).transpose(0, 1, 3, 2)
    sum_recip = sum_recip.reshape(bs, nheads, seqlen // P, P).transpose(0, 1, 3, 2)
    lse = (-1.0 * (neg_max + np.log(sum_recip))).astype(np.float32)
    dq, dk, dv = flash_attn_bwd[bs, nheads](
        dev(q), dev(k), dev(v), dev(o_proj.astype(np.float32)), dev(dy), dev(lse), None,
        use_causal_mask=True, mixed_precision=True,
    )  # fmt: skip
    return [
        (n, o, torch.from_numpy(g), 1e-2, 0)
        for n, o, g in (("dq", dq, dq_g), ("dk", dk, dk_g), ("dv", dv, dv_g))
    ]


def _sd_attention(load):
    load.package("samples_ref/src", "nki_samples")
    from nki_samples.reference.attention import fused_self_attn_for_SD_small_head_size as kern

    bs, seqlen, d = 1, 1024, 128
    q, k, v = (
        _rand(bs, d, seqlen, lo=0),
        _rand(bs, seqlen, d, lo=0, seed=1),
        _rand(bs, seqlen, d, lo=0, seed=2),
    )
    out = kern[bs](dev(q), dev(k), dev(v))
    # the shipped test's golden: softmax((0.125 q)^T k^T) v
    ref = torch.softmax((0.125 * q).transpose(1, 2) @ k.transpose(1, 2), -1) @ v
    return [("out", out, ref, 1e-2, 0)]


def _allocated_sd_attention(load):
    load.package("samples_ref/src", "nki_samples")
    from nki_samples.reference.allocated_attention import (
        allocated_fused_self_attn_for_SD_small_head_size as kern,
    )

    bs, seqlen, d = 1, 4096, 128
    q, k, v = (
        _rand(bs, d, seqlen, lo=0),
        _rand(bs, d, seqlen, lo=0, seed=1),
        _rand(bs, seqlen, d, lo=0, seed=2),
    )
    out = kern[bs](dev(q), dev(k), dev(v))
    ref = (torch.softmax((0.125 * q).transpose(1, 2) @ k, -1) @ v).transpose(1, 2)
    return [("out", out, ref, 1e-2, 0)]


def _rmsnorm_qkv(load):
    load.package("samples_ref/src", "nki_samples")
    from nki_samples.reference.allocated_fused_linear import allocated_fused_rms_norm_qkv as kern

    t = _ref_test(load, "test_rmsnorm_qkv")
    rs = np.random.RandomState(0)
    hidden = rs.random_sample((1, 128, 512)).astype(np.float16)
    weights = rs.random_sample((512, 512)).astype(np.float16)
    out = kern(dev(hidden), dev(weights))
    gold = t.cpu_golden_result(
        hidden.astype(np.float64), None, weights.astype(np.float64), np.float16
    )
    return [("out", out, torch.from_numpy(gold.astype(np.float32)), 1e-2, 1e-2)]


def _double_row_matmul(load):
    load.package("samples_ref/src", "nki_samples")
    from nki_samples.reference.double_row_matmul import quantized_double_row_matmul as kern

    t = _ref_test(load, "test_double_row_matmul")
    M, K, N = 512, 2048, 512
    rs = np.random.RandomState(0)
    lhs, rhs = rs.rand(M, K), rs.rand(K, N)
    scale, rhs_q = t.column_wise_quantize(rhs)
    rhs_qr = t.reshape(rhs_q)
    out = kern(
        dev(lhs, torch.bfloat16),
        dev(rhs_qr, torch.float8_e4m3fn),
        dev(scale, torch.bfloat16),
        2,
        2,
        16,
    )
    return [("out", out, torch.from_numpy(lhs @ rhs).float(), math.inf, 2e-2)]


def _add_nx8(load):
    load.package("samples_ref/src", "nki_samples")
    from nki_samples.reference.tutorial import add_kernel_nx8x128x512 as kern

    n = 2
    a, b = _rand(n, 8, 128, 512), _rand(n, 8, 128, 512, seed=1)
    out = kern[n](dev(a), dev(b), a.numel())
    return [("out", out, a + b, 1e-6, 0)]


def _select_and_scatter(load):
    load.package("samples_ref/src", "nki_samples")
    from nki_samples.reference.vision import select_and_scatter_kernel as kern

    t = _ref_test(load, "test_select_and_scatter")
    rs = np.random.RandomState(0)
    # the kernel needs C == 64 and an even batch (two images share the 128 partitions)
    op = rs.random_sample((2, 64, 112, 112)).astype(np.float32)
    src = rs.random_sample((2, 64, 56, 56)).astype(np.float32)
    out = kern(dev(op), dev(src))
    return [("out", out, torch.from_numpy(t.cpu_golden_result(op, src)), 1e-5, 1e-5)]


def _resize_nearest(load):
    load.package("samples_ref/src", "nki_samples")
    from nki_samples.reference.vision import resize_nearest_fixed_dma_kernel as kern

    t = _ref_test(load, "test_resize_nearest")
    rs = np.random.RandomState(0)
    x = rs.random_sample((2, 30, 20, 256)).astype(np.float32)
    out = kern[2](dev(x), (2, 59, 38, 256))
    return [("out", out, torch.from_numpy(t.cpu_golden_result(x, (2, 59, 38, 256))), 1e-2, 0)]


def _adaptive_avg_pool(load):
    load.package("samples_ref/src", "nki_samples")
    from nki_samples.reference.vision import adaptive_avg_pool2d_kernel as kern

    t = _ref_test(load, "test_adaptive_avg_pool2d")
    rs = np.random.RandomState(0)
    x = rs.randn(1, 64, 56, 56).astype(np.float32)
    out = kern(dev(x), 7)
    return [("out", out, torch.from_numpy(t.cpu_golden_result_numpy(x, 7)), 1e-5, 1e-5)]


# --------------------------------------------------------------------- nki-library (d2ad3a5)


def _lib(load, sub, name):
    os.environ.setdefault("NKILIB_FORCE_BUNDLED_LIBRARY", "1")
    return load.package("library/src/nkilib_src", f"nkilib.core.{sub}.{name}")


def _cumsum(load):
    kern = _lib(load, "cumsum", "cumsum").cumsum
    ref = _lib(load, "cumsum", "cumsum_torch").cumsum_torch_ref
    x = _rand(256, 1000)
    return [("out", kern(dev(x)), ref(x)["output_0"], 1e-3, 1e-3)]


def _cascaded_max(load):
    kern = _lib(load, "max", "cascaded_max").cascaded_max
    ref = _lib(load, "max", "cascaded_max_torch").cascaded_max_torch_ref
    x = _rand(4, 4096)
    outs = kern(dev(x))
    r = ref(x)
    names = list(r)
    return [(n, o, r[n].float(), 0, 0) for n, o in zip(names, outs)]


def _rope(load):
    kern = _lib(load, "embeddings", "rope").RoPE
    ref = _lib(load, "embeddings", "rope_torch").rope_torch_ref
    d, n_heads, B, S = 128, 2, 1, 256
    x = _rand(d, B, n_heads, S)
    cos, sin = _rand(d // 2, B, S, seed=1), _rand(d // 2, B, S, seed=2)
    out = kern(dev(x), dev(cos), dev(sin))
    return [("x_out", out, ref(x, cos, sin)["x_out"], 1e-4, 1e-4)]


def _rope_hf(load):
    kern = _lib(load, "embeddings", "rope_hf").rope_hf
    ref = _lib(load, "embeddings", "rope_hf_torch").rope_hf_torch_ref
    B, H, S, d = 1, 2, 128, 64
    q, k = _rand(B, H, S, d), _rand(B, H, S, d, seed=1)
    cos, sin = _rand(B, S, d, seed=2), _rand(B, S, d, seed=3)
    q_out, k_out = dev(torch.zeros_like(q)), dev(torch.zeros_like(k))
    out = kern(dev(q), dev(k), q_out, k_out, cos=dev(cos), sin=dev(sin))
    r = ref(q, k, None, None, cos=cos, sin=sin)
    return [(n, o, r[n], 1e-4, 1e-4) for n, o in zip(list(r)[:2], out)]


# -------------------------------------------------------------------------- the collection

C = Case
TRN3 = "trn3.3xlarge"  # the MX tutorial's kernels are @nki.jit(platform_target="trn3")
CASES: list[Case] = [
    C("tut.tensor_add", "nki-samples@6905a68", f"{TUT}/tensor_addition/tensor_addition_nki_kernels.py",
      "nki_tensor_add_kernel_ (via nki_tensor_add)", "old",
      _tensor_add(f"{TUT}/tensor_addition/tensor_addition_nki_kernels.py", "nki_tensor_add"), "runner (a + b)"),
    C("tut.spmd_tensor_add", "nki-samples@6905a68", f"{TUT}/tensor_addition/spmd_tensor_addition_nki_kernels.py",
      "nki_tensor_add_kernel_ (via nki_tensor_add)", "old",
      _tensor_add(f"{TUT}/tensor_addition/spmd_tensor_addition_nki_kernels.py", "nki_tensor_add"), "runner (a + b)"),
    C("tut.spmd_nc2_tensor_add", "nki-samples@6905a68",
      f"{TUT}/tensor_addition/spmd_multiple_nc_tensor_addition_nki_kernels.py",
      "nki_tensor_add_kernel_ (via nki_tensor_add_nc2)", "old",
      _tensor_add(f"{TUT}/tensor_addition/spmd_multiple_nc_tensor_addition_nki_kernels.py", "nki_tensor_add_nc2"),
      "runner (a + b)"),
    C("tut.transpose2d", "nki-samples@6905a68", f"{TUT}/transpose2d/transpose2d_nki_kernels.py",
      "tensor_transpose2D_kernel_", "old", _transpose2d, "transpose2d_torch.py (same expression)"),
    C("tut.avgpool2d", "nki-samples@6905a68", f"{TUT}/average_pool2d/average_pool2d_nki_kernels.py",
      "tensor_avgpool_kernel", "old", _avgpool, "torch avg_pool2d"),
    *[
        C(f"tut.matmul.{fn}", "nki-samples@6905a68", f"{TUT}/matrix_multiplication/matrix_multiplication_nki_kernels.py",
          f"nki_matmul_{fn}_", "0.2+", _matmul(f"nki_matmul_{fn}_", *shape), "runner (lhs @ rhs)")
        for fn, shape in [
            ("basic", (64, 128, 512)),
            ("tiled", (256, 256, 1024)),
            ("hoist_load", (256, 256, 1024)),
            ("block_free_dimension", (256, 256, 2048)),
            ("fully_optimized", (2048, 1024, 1024)),
        ]
    ],
    *[
        C(f"tut.mamba_{v}", "nki-samples@6905a68", f"{TUT}/fused_mamba/mamba_nki_kernels.py", f"mamba_{v}", "old",
          _mamba(f"mamba_{v}"), "runner (mamba_torch.py's recurrence; that file needs torch_xla)")
        for v in ("v1", "v2", "v3")
    ],
    *[
        C(f"tut.attn_fwd_{v}", "nki-samples@6905a68", f"{TUT}/attention_fwd_performance/attention_kernels.py",
          f"attn_fwd_{v}", "old", _attn_tutorial(f"attn_fwd_{v}", 128 if v in ("v1", "v2") else 1024),
          "test_attention.py numpy_attention (same math, torch)")
        for v in ("v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v8a", "v9", "v10", "v11")
    ],
    C("tut.mx_copy_strided_tensor_copy", "nki-samples@6905a68", f"{TUT}/mxfp-matmul/mx_kernels.py",
      "kernel_copy_strided_quantize_matmul_mx (use_tensor_copy=True)", "0.2+", _mx_copy_strided(True),
      "mx_toplevel.py (st.T @ mv)", TRN3),
    C("tut.mx_copy_strided_dma", "nki-samples@6905a68", f"{TUT}/mxfp-matmul/mx_kernels.py",
      "kernel_copy_strided_quantize_matmul_mx (use_tensor_copy=False)", "0.2+", _mx_copy_strided(False),
      "mx_toplevel.py (st.T @ mv)", TRN3),
    C("ref.flash_fwd", "nki-samples@8370e11", f"{REF}/attention.py", "flash_fwd", "old", _flash_fwd,
      "test_flash_attn_fwd.py cpu_attention_forward"),
    C("ref.flash_attn_bwd", "nki-samples@8370e11", f"{REF}/attention.py", "flash_attn_bwd", "old", _flash_bwd,
      "test_flash_attn_bwd.py cpu_attention_backward"),
    C("ref.sd_attention", "nki-samples@8370e11", f"{REF}/attention.py", "fused_self_attn_for_SD_small_head_size",
      "old", _sd_attention, "test_SD_attention_small_head.py golden (torch softmax: no scipy here)"),
    C("ref.allocated_sd_attention", "nki-samples@8370e11", f"{REF}/allocated_attention.py",
      "allocated_fused_self_attn_for_SD_small_head_size", "old", _allocated_sd_attention,
      "test_allocated_SD_attention_small_head.py golden (torch softmax)"),
    C("ref.rmsnorm_qkv", "nki-samples@8370e11", f"{REF}/allocated_fused_linear.py", "allocated_fused_rms_norm_qkv",
      "old", _rmsnorm_qkv, "test_rmsnorm_qkv.py cpu_golden_result"),
    C("ref.double_row_matmul", "nki-samples@8370e11", f"{REF}/double_row_matmul.py", "quantized_double_row_matmul",
      "old", _double_row_matmul, "test_double_row_matmul.py (lhs @ rhs, rtol 2e-2)"),
    C("ref.add_nx8", "nki-samples@8370e11", f"{REF}/tutorial.py", "add_kernel_nx8x128x512", "old", _add_nx8,
      "runner (a + b)"),
    C("ref.select_and_scatter", "nki-samples@8370e11", f"{REF}/vision.py", "select_and_scatter_kernel", "old",
      _select_and_scatter, "test_select_and_scatter.py cpu_golden_result"),
    C("ref.resize_nearest", "nki-samples@8370e11", f"{REF}/vision.py", "resize_nearest_fixed_dma_kernel", "old",
      _resize_nearest, "test_resize_nearest.py cpu_golden_result"),
    C("ref.adaptive_avg_pool2d", "nki-samples@8370e11", f"{REF}/vision.py", "adaptive_avg_pool2d_kernel", "old",
      _adaptive_avg_pool, "test_adaptive_avg_pool2d.py cpu_golden_result_numpy"),
    C("lib.cumsum", "nki-library@d2ad3a5", f"{LIB}/cumsum/cumsum.py", "cumsum", "0.2+", _cumsum, "cumsum_torch.py"),
    C("lib.cascaded_max", "nki-library@d2ad3a5", f"{LIB}/max/cascaded_max.py", "cascaded_max", "0.2+", _cascaded_max,
      "cascaded_max_torch.py"),
    C("lib.rope", "nki-library@d2ad3a5", f"{LIB}/embeddings/rope.py", "RoPE", "0.2+", _rope, "rope_torch.py"),
    C("lib.rope_hf", "nki-library@d2ad3a5", f"{LIB}/embeddings/rope_hf.py", "rope_hf", "0.2+", _rope_hf,
      "rope_hf_torch.py"),
]  # fmt: skip


def check(results) -> str | None:
    """None when every output is close to its reference, else what differs."""
    for name, out, ref, atol, rtol in results:
        got = host(out)
        want = ref.float()
        if got.shape != want.shape:
            if got.numel() == want.numel():
                got = got.reshape(want.shape)
            else:
                return f"{name}: shape {tuple(got.shape)} vs reference {tuple(want.shape)}"
        bad = ~torch.isclose(
            got, want, atol=atol if atol != math.inf else 0, rtol=rtol, equal_nan=False
        )
        if atol == math.inf:  # relative check only, as the shipped test does
            bad = (got - want).abs() > rtol * want.abs()
        if bad.any():
            err = (got - want).abs().max().item()
            return f"{name}: {int(bad.sum())} of {want.numel()} elements differ (max abs err {err:.3g})"
    return None


def run_in_process(case: Case, root: str) -> dict:
    """A case whose kernel targets another instance runs in a child process emulating it (the
    emulated instance is fixed when the device starts)."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        env = dict(os.environ, TORCH_NEURONX_EMULATED_INSTANCE=case.instance)
        cmd = [sys.executable, "-m", "torch_neuronx.tools.nki_public_run", root, "--only", case.id]
        subprocess.run(cmd + ["--exact", "--json", out], env=env, check=False, capture_output=True)
        if not os.path.exists(out):
            return {
                "id": case.id,
                "outcome": "other",
                "detail": "child process failed",
                "seconds": 0,
            }
        with open(out) as f:
            return json.load(f)[0]


def run_case(case: Case, root: str) -> dict:
    if case.instance and topology.current().instance.name != case.instance:
        return run_in_process(case, root)
    load = Loader(root)
    t0 = time.perf_counter()
    rec = {
        "id": case.id,
        "repo": case.repo,
        "path": case.path,
        "kernel": case.kernel,
        "api": case.api,
    }
    try:
        results = case.run(load)
        bad = check(results)
        rec["outcome"] = "match" if bad is None else "mismatch"
        rec["detail"] = bad or ""
    except nki_errors.NkiError as e:
        rec["outcome"] = "named"
        rec["detail"] = f"{type(e).__name__}: {e}"
    except Exception as e:  # noqa: BLE001 - every other failure is recorded, not raised
        tb = traceback.extract_tb(e.__traceback__)
        where = next((f"{os.path.basename(f.filename)}:{f.lineno}" for f in reversed(tb)), "")
        rec["outcome"] = "other"
        rec["detail"] = f"{type(e).__name__}: {e} ({where})"
    rec["seconds"] = round(time.perf_counter() - t0, 1)
    return rec


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("root", help="folder with samples/, samples_ref/, library/ exports")
    p.add_argument("--only", nargs="*", help="case ids (prefixes) to run")
    p.add_argument("--json", help="write the records here")
    p.add_argument("--list", action="store_true", help="list the collection and exit")
    p.add_argument("--exact", action="store_true", help="--only names whole ids")
    p.add_argument("--markdown", action="store_true", help="print the docs/nki.md table too")
    a = p.parse_args(argv)
    if a.list:
        for c in CASES:
            print(f"{c.id:34} {c.api:5} {c.repo:20} {c.path} :: {c.kernel}")
        return 0
    install_import_names()
    os.environ.setdefault("NEURON_FRAMEWORK_DEBUG", "1")

    def chosen(c):
        return not a.only or any(c.id == o if a.exact else c.id.startswith(o) for o in a.only)

    cases = [c for c in CASES if chosen(c)]
    recs = []
    for c in cases:
        rec = run_case(c, a.root)
        recs.append(rec)
        print(
            f"{rec['id']:34} {rec['outcome']:8} {rec['seconds']:6}s  {rec['detail'][:300]}",
            flush=True,
        )
    counts = {
        k: sum(r["outcome"] == k for r in recs) for k in ("match", "mismatch", "named", "other")
    }
    print(f"{counts['match']} of {len(recs)} ran and matched; {counts}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(recs, f, indent=1)
    if a.markdown:
        print(markdown(recs))
    return 0


def markdown(recs) -> str:
    """The per-kernel table of docs/nki.md ("Public kernels, measured")."""
    by_id = {c.id: c for c in CASES}
    lines = [
        "| # | source | file | kernel | API | reference | outcome |",
        "|---|---|---|---|---|---|---|",
    ]
    for n, r in enumerate(recs, 1):
        c = by_id[r["id"]]
        path = c.path.split("/", 1)[1]
        out = r["outcome"]
        if out != "match":
            out += ": " + r["detail"].split("\n")[0].replace("|", "/")[:160]
        lines.append(
            f"| {n} | {c.repo} | `{path}` | `{c.kernel}` | {c.api} | {c.reference} | {out} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
