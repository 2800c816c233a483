"""Flash-attention forward: the tile loop with an online softmax.

    python examples/nki/flash_attention.py

For one head, ``out = softmax(q k^T * scale [+ causal mask]) v`` with ``q, k, v[S, d]``
(``d <= 128``). Each 128-query tile keeps a running row max ``m``, row sum ``row_sum`` and output
accumulator in SBUF while it walks the key/value tiles:

1. ``s = q_tile k_tile^T`` on the Tensor Engine (q and k are loaded transposed by DMA, so the
   head dim d is the contraction on the partitions), evicted to SBUF with the scale;
2. causal tiles: ``affine_select`` keeps ``s[i, j]`` where ``query - key >= 0``;
3. ``m_new = max(m, rowmax(s))``; ``p = exp(s - m_new)`` with its row sum fused into the same
   Scalar Engine instruction; ``alpha = exp(m - m_new)``; ``row_sum = row_sum * alpha + rowsum(p)``;
4. ``acc = acc * alpha + p v``: ``p`` is transposed 128 x 128 at a time on the Tensor Engine
   and the chunks accumulate in one PSUM bank.

Key tiles above the diagonal are skipped entirely in causal mode.
"""

from __future__ import annotations

import math

import torch

import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
from torch_neuronx import nki

BQ = 128  # queries per tile (partitions)
BK = 512  # keys per tile (one PSUM bank of scores)
NEG = -3.0e38


@nki.jit
def nki_flash_attention_fwd(q, k, v, softmax_scale, causal):
    S, d = q.shape
    assert k.shape == (S, d) and v.shape == (S, d) and d <= 128
    bk = min(BK, S)
    assert S % BQ == 0 and S % bk == 0, "S must be a multiple of 128 (and of 512 above 512)"
    out = nl.ndarray((S, d), dtype=q.dtype, buffer=nl.shared_hbm)
    mm_dtype = q.dtype  # Tensor Engine input dtype (bf16 or fp32)
    for qi in nl.affine_range(S // BQ):
        qT = nl.ndarray((d, BQ), dtype=q.dtype, buffer=nl.sbuf)
        nisa.dma_transpose(dst=qT, src=q[qi * BQ : (qi + 1) * BQ, :])
        m = nl.ndarray((BQ, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=m, value=NEG)
        row_sum = nl.ndarray((BQ, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=row_sum, value=0.0)
        acc = nl.ndarray((BQ, d), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=acc, value=0.0)
        n_kv = S // bk
        if causal:
            n_kv = ((qi + 1) * BQ + bk - 1) // bk  # key tiles at or below the diagonal
        for kj in nl.sequential_range(n_kv):
            kT = nl.ndarray((d, bk), dtype=k.dtype, buffer=nl.sbuf)
            nisa.dma_transpose(dst=kT, src=k[kj * bk : (kj + 1) * bk, :])
            s_psum = nl.ndarray((BQ, bk), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul(dst=s_psum, stationary=qT, moving=kT)
            s = nl.ndarray((BQ, bk), dtype=nl.float32, buffer=nl.sbuf)
            nisa.activation(dst=s, op=nl.copy, data=s_psum, scale=float(softmax_scale))
            if causal and (kj + 1) * bk > qi * BQ:
                # keep s[i, j] where (qi*BQ + i) - (kj*bk + j) >= 0
                nisa.affine_select(
                    dst=s,
                    pattern=[[-1, bk]],
                    channel_multiplier=1,
                    on_true_tile=s,
                    on_false_value=NEG,
                    cmp_op=nl.greater_equal,
                    offset=qi * BQ - kj * bk,
                )
            # online softmax statistics
            m_tile = nl.ndarray((BQ, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_reduce(dst=m_tile, op=nl.maximum, data=s, axis=1)
            m_new = nl.ndarray((BQ, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_tensor(dst=m_new, data1=m, data2=m_tile, op=nl.maximum)
            neg_m = nl.ndarray((BQ, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_scalar(dst=neg_m, data=m_new, op0=nl.multiply, operand0=-1.0)
            p = nl.ndarray((BQ, bk), dtype=mm_dtype, buffer=nl.sbuf)
            p_sum = nl.ndarray((BQ, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.activation(
                dst=p,
                op=nl.exp,
                data=s,
                bias=neg_m,
                reduce_op=nl.add,
                reduce_res=p_sum,
                reduce_cmd=nisa.reduce_cmd.reset_reduce,
            )
            alpha = nl.ndarray((BQ, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.activation(dst=alpha, op=nl.exp, data=m, bias=neg_m)
            nisa.tensor_scalar(dst=row_sum, data=row_sum, op0=nl.multiply, operand0=alpha)
            nisa.tensor_tensor(dst=row_sum, data1=row_sum, data2=p_sum, op=nl.add)
            nisa.tensor_copy(dst=m, src=m_new)
            # acc = acc * alpha + p @ v, p transposed 128 x 128 at a time
            pv_psum = nl.ndarray((BQ, d), dtype=nl.float32, buffer=nl.psum)
            for c in nl.sequential_range(bk // 128):
                pT_psum = nl.ndarray((128, BQ), dtype=mm_dtype, buffer=nl.psum)
                nisa.nc_transpose(dst=pT_psum, data=p[:, c * 128 : (c + 1) * 128])
                pT = nl.ndarray((128, BQ), dtype=mm_dtype, buffer=nl.sbuf)
                nisa.tensor_copy(dst=pT, src=pT_psum)
                v_c = nl.ndarray((128, d), dtype=v.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=v_c, src=v[kj * bk + c * 128 : kj * bk + (c + 1) * 128, :])
                nisa.nc_matmul(dst=pv_psum, stationary=pT, moving=v_c, accumulate=(c > 0))
            nisa.tensor_scalar(dst=acc, data=acc, op0=nl.multiply, operand0=alpha)
            nisa.tensor_tensor(dst=acc, data1=acc, data2=pv_psum, op=nl.add)
        inv_l = nl.ndarray((BQ, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.reciprocal(dst=inv_l, data=row_sum)
        o = nl.ndarray((BQ, d), dtype=q.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=o, data=acc, op0=nl.multiply, operand0=inv_l)
        nisa.dma_copy(dst=out[qi * BQ : (qi + 1) * BQ, :], src=o)
    return out


@nki.nki_op("nki_examples::flash_attention_fwd", mutates_args={})
def flash_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False
) -> torch.Tensor:
    """Attention of one head (q, k, v: [S, d]); softmax scale 1/sqrt(d)."""
    return nki_flash_attention_fwd(q, k, v, 1.0 / math.sqrt(q.shape[-1]), causal)


def reference(q, k, v, causal=False):
    out = torch.nn.functional.scaled_dot_product_attention(
        q.float()[None], k.float()[None], v.float()[None], is_causal=causal
    )[0]
    return out.to(q.dtype)


def main():
    for dtype in (torch.float32, torch.bfloat16):
        for causal in (False, True):
            q, k, v = (torch.randn(1024, 64, dtype=dtype, device="neuron") for _ in range(3))
            out = flash_attention(q, k, v, causal)
            t = 2e-2 if dtype == torch.bfloat16 else 1e-4
            ref = reference(q, k, v, causal)
            torch.testing.assert_close(out.cpu().float(), ref.cpu().float(), rtol=t, atol=t)
            print(
                f"flash attention {dtype} causal={causal}: matches torch; "
                f"{nki_flash_attention_fwd.last_report}"
            )


if __name__ == "__main__":
    main()
