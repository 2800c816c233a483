"""Flash-attention forward written in the pre-0.2 language (``neuronxcc.nki``).

    python examples/nki/flash_attention_legacy.py

The same algorithm as flash_attention.py, in the style of AWS's older tutorials and published
kernels: ``nl.par_dim`` with block dimensions (one 128-query tile per block), NumPy dtypes and
NumPy functions as operators, ISA calls that return their result (``dtype=``, ``mask=``),
``nl.arange`` index expressions with a predicate for the causal ``affine_select``, and
``psum[...] += nisa.nc_matmul(...)`` accumulation. The kernel's only change from code written
for ``neuronxcc.nki`` is its import lines (or ``install_as_neuronxcc()``, see docs/nki.md).

Inputs follow the old kernels' layout: ``q`` and ``k`` are ``[d, S]`` (head dim on the
partitions, the matmul contraction), ``v`` is ``[S, d]``.
"""

from __future__ import annotations

import numpy as np
import torch

import torch_neuronx.nki.legacy as nki
import torch_neuronx.nki.legacy.isa as nisa
import torch_neuronx.nki.legacy.language as nl

B_P = 128  # queries per tile (partitions)
B_F = 512  # keys per score tile (one PSUM bank of fp32)


@nki.jit
def legacy_flash_fwd(q, k, v, softmax_scale, use_causal_mask):
    d, seqlen = q.shape
    assert d <= 128 and seqlen % B_F == 0
    n_q = seqlen // B_P
    n_k = seqlen // B_F
    o = nl.ndarray((seqlen, d), dtype=q.dtype, buffer=nl.shared_hbm)

    # K^T and V stay in SBUF: K as (d, S); V as S/128 blocks of (128 keys, d)
    k_sb = nl.load(k)
    v_sb = nl.ndarray((seqlen // B_P, nl.par_dim(B_P), d), dtype=v.dtype)
    for j in nl.affine_range(seqlen // B_P):
        v_sb[j, :, :] = nl.load(v[nl.ds(j * B_P, B_P), :])

    # running statistics and output accumulators: one block per query tile
    m_buf = nl.full((n_q, nl.par_dim(B_P), 1), fill_value=nl.fp32.min, dtype=np.float32)
    l_buf = nl.zeros((n_q, nl.par_dim(B_P), 1), dtype=np.float32)
    o_buf = nl.zeros((n_q, nl.par_dim(B_P), d), dtype=np.float32)

    i_q, i_k = nl.mgrid[0:B_P, 0:B_F]
    for qi in nl.affine_range(n_q):
        q_sb = nl.load(q[:, nl.ds(qi * B_P, B_P)])
        for ki in nl.sequential_range(n_k):
            if use_causal_mask and ki * B_F > qi * B_P + B_P - 1:
                continue  # the whole key tile is above the diagonal
            s_psum = nl.zeros((nl.par_dim(B_P), B_F), dtype=np.float32, buffer=nl.psum)
            s_psum[:, :] += nisa.nc_matmul(q_sb, k_sb[:, nl.ds(ki * B_F, B_F)])
            if use_causal_mask:
                s = nisa.affine_select(
                    pred=(qi * B_P + i_q - (ki * B_F + i_k) >= 0),
                    on_true_tile=s_psum[i_q, i_k],
                    on_false_value=-9984.0,
                    dtype=np.float32,
                )
            else:
                s = nisa.tensor_copy(s_psum, dtype=np.float32)
            # online softmax (scores scaled inside exp)
            m_tile = nisa.tensor_reduce(np.max, s, axis=(1,), dtype=np.float32, keepdims=True)
            m_new = nisa.tensor_scalar(m_tile, np.multiply, softmax_scale, dtype=np.float32)
            m_new = nl.maximum(m_new, m_buf[qi, :, :])
            neg_m = nisa.tensor_scalar(m_new, np.multiply, -1.0, dtype=np.float32)
            row_sum = nl.ndarray((nl.par_dim(B_P), 1), dtype=np.float32)
            p = nisa.activation(
                np.exp,
                s,
                bias=neg_m,
                scale=softmax_scale,
                reduce_op=np.add,
                reduce_res=row_sum,
                dtype=v.dtype,
            )
            alpha = nisa.activation(np.exp, m_buf[qi, :, :], bias=neg_m, dtype=np.float32)
            l_buf[qi, :, :] = nl.add(nl.multiply(l_buf[qi, :, :], alpha), row_sum)
            m_buf[qi, :, :] = m_new
            # P V: 128-key chunks of P transposed on the Tensor Engine, summed in one PSUM tile
            pv = nl.zeros((nl.par_dim(B_P), d), dtype=np.float32, buffer=nl.psum)
            for c in nl.affine_range(B_F // B_P):
                p_t = nisa.nc_transpose(p[:, nl.ds(c * B_P, B_P)])
                p_t_sb = nisa.tensor_copy(p_t, dtype=v.dtype)
                pv[:, :] += nisa.nc_matmul(p_t_sb, v_sb[ki * (B_F // B_P) + c, :, :])
            o_buf[qi, :, :] = nl.add(nl.multiply(o_buf[qi, :, :], alpha), pv)
        out = nl.divide(o_buf[qi, :, :], l_buf[qi, :, :], dtype=q.dtype)
        nl.store(o[nl.ds(qi * B_P, B_P), :], value=out)
    return o


def flash_attention(q, k, v, causal=False):
    """``q, k, v[S, d]`` on the neuron device -> ``softmax(q k^T / sqrt(d)) v``."""
    d = q.shape[1]
    return legacy_flash_fwd(q.t().contiguous(), k.t().contiguous(), v, d**-0.5, causal)


def reference(q, k, v, causal=False):
    f = [t.cpu().float()[None] for t in (q, k, v)]
    return torch.nn.functional.scaled_dot_product_attention(*f, is_causal=causal)[0]


if __name__ == "__main__":
    import torch_neuronx  # noqa: F401 - registers the neuron device

    q, k, v = (torch.randn(1024, 64, device="neuron") for _ in range(3))
    out = flash_attention(q, k, v, causal=True)
    err = (out.cpu() - reference(q, k, v, True)).abs().max().item()
    print(f"max |nki - sdpa| = {err:.2e}")
    print(legacy_flash_fwd.last_report)
