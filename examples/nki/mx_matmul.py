"""MXFP8 / MXFP4 matrix multiplication on NeuronCore-v4 (Trn3), in the style of AWS's
"MXFP Matrix Multiplication with NKI" guide
(https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/deep-dives/mxfp-matmul.html).

Two kernels:

- ``mx_matmul_offline``: data quantized on the host, passed as raw bits (int32 for the fp8
  x4 types, int16 for fp4 x4) and viewed as the packed MX type with ``t.ap(dtype=...)``;
  the host's scales are contiguous ``(K // 8, F)`` and are spread over the SBUF quadrants
  (4 scale partitions at the start of each 32-partition quadrant) by DMA.
- ``quantize_matmul``: bfloat16 inputs of contraction ``4 K`` rearranged by DMA into the MX
  layout (``[K, F, 4]``: contraction row ``i K + p`` is value ``i`` of partition ``p``),
  quantized on the device with ``quantize_mx`` (both scale sets packed into one tile at
  quadrant offsets 0 and 4), then ``nc_matmul_mx``.

Run with ``TORCH_NEURONX_EMULATED_INSTANCE=trn3.3xlarge`` (MX is NeuronCore-v4 only).
Host helpers build MX data and its PyTorch reference (dequantize, then an fp32 matmul).
"""

import torch

import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
from torch_neuronx import nki


def _scales_to_quadrants(scale_hbm, K, F):
    """Contiguous host scales ``(K // 8, F)`` -> SBUF rows ``32 q + g`` (quadrant q, group g)."""
    sb = nl.ndarray((K, F), dtype=nl.uint8, buffer=nl.sbuf)
    for q in range(K // 32):
        nisa.dma_copy(dst=sb[32 * q : 32 * q + 4, :], src=scale_hbm[4 * q : 4 * q + 4, :])
    return sb


@nki.jit
def mx_matmul_offline(st_bits, st_scale, mv_bits, mv_scale, mx_dtype):
    """``dequant(st).T @ dequant(mv)`` in bfloat16; ``st_bits`` ``(K, M)``, ``mv_bits`` ``(K, N)``
    packed MX bits, scales ``(K // 8, M)`` / ``(K // 8, N)`` uint8 (E8M0)."""
    K, M = st_bits.shape
    N = mv_bits.shape[1]
    st_x4 = st_bits.ap(pattern=[[M, K], [1, M]], offset=0, dtype=mx_dtype)
    mv_x4 = mv_bits.ap(pattern=[[N, K], [1, N]], offset=0, dtype=mx_dtype)
    st = nl.ndarray((K, M), dtype=mx_dtype, buffer=nl.sbuf)
    mv = nl.ndarray((K, N), dtype=mx_dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=st, src=st_x4)
    nisa.dma_copy(dst=mv, src=mv_x4)
    st_sc = _scales_to_quadrants(st_scale, K, M)
    mv_sc = _scales_to_quadrants(mv_scale, K, N)
    res = nl.ndarray((M, N), dtype=nl.bfloat16, buffer=nl.psum)
    nisa.nc_matmul_mx(dst=res, stationary=st, moving=mv, stationary_scale=st_sc, moving_scale=mv_sc)
    sb = nl.ndarray((M, N), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.tensor_copy(dst=sb, src=res)
    out = nl.ndarray((M, N), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=sb)
    return out


@nki.jit
def quantize_matmul(st, mv, mx_dtype=nl.float8_e4m3fn_x4):
    """``st.T @ mv`` through MXFP8: ``st`` ``(4 K, M)``, ``mv`` ``(4 K, N)`` bfloat16, K <= 128."""
    K4, M = st.shape
    N = mv.shape[1]
    K = K4 // 4
    st_sb = nl.ndarray((K, M, 4), dtype=st.dtype, buffer=nl.sbuf)
    mv_sb = nl.ndarray((K, N, 4), dtype=mv.dtype, buffer=nl.sbuf)
    for i in range(4):  # strided DMA: value i of each packed element from row block i
        nisa.dma_copy(dst=st_sb[:, :, i], src=st[i * K : (i + 1) * K, :])
        nisa.dma_copy(dst=mv_sb[:, :, i], src=mv[i * K : (i + 1) * K, :])
    st_q = nl.ndarray((K, M), dtype=mx_dtype, buffer=nl.sbuf)
    mv_q = nl.ndarray((K, N), dtype=mx_dtype, buffer=nl.sbuf)
    scales = nl.ndarray((K, max(M, N)), dtype=nl.uint8, buffer=nl.sbuf)
    st_sc, mv_sc = scales[0:, :M], scales[4:, :N]  # quadrant offsets 0 and 4 of one tile
    nisa.quantize_mx(dst=st_q, src=st_sb.reshape((K, M * 4)), dst_scale=st_sc)
    nisa.quantize_mx(dst=mv_q, src=mv_sb.reshape((K, N * 4)), dst_scale=mv_sc)
    res = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul_mx(
        dst=res, stationary=st_q, moving=mv_q, stationary_scale=st_sc, moving_scale=mv_sc
    )
    sb = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=sb, src=res)
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=sb)
    return out


# ---- host side: MX data and the PyTorch reference
FP4_VALUES = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])  # E2M1 codes 0..7 (OCP MX)


def random_mx(K, F, kind, generator=None):
    """Random MX data for a ``(K, F)`` packed tile: ``(bits, scales, values)`` with ``values``
    the ``(K, F, 4)`` element values (float32) and ``scales`` ``(K // 8, F)`` uint8 in 120..134."""
    g = generator
    scales = torch.randint(120, 135, (K // 8, F), dtype=torch.uint8, generator=g)
    if kind == "float4_e2m1fn":
        codes = torch.randint(0, 16, (K, F, 4), dtype=torch.uint8, generator=g)
        values = torch.cat([FP4_VALUES, -FP4_VALUES])[codes.long()]
        byte = codes[..., 0::2] | (codes[..., 1::2] << 4)  # value 2j in the low nibble
        bits = byte.reshape(K, -1).view(torch.int16)
    else:
        dt = {"float8_e4m3fn": torch.float8_e4m3fn, "float8_e5m2": torch.float8_e5m2}[kind]
        values = (torch.randn(K, F, 4, generator=g) * 4).to(dt).float()
        bits = values.to(dt).view(torch.uint8).reshape(K, -1).view(torch.int32)
    return bits, scales, values


def dequantize(values, scales):
    """``(4 K, F)`` float32 in contraction order (row ``i K + p``) from ``(K, F, 4)`` values
    and ``(K // 8, F)`` E8M0 scales."""
    K, F, _ = values.shape
    s = torch.exp2(scales.float() - 127).repeat_interleave(8, dim=0)
    return (values * s[:, :, None]).permute(2, 0, 1).reshape(4 * K, F)


def quantize_reference(x, kind="float8_e4m3fn"):
    """The MX quantize-dequantize of ``x`` ``(4 K, F)`` (contraction rows) as ``quantize_mx``
    does it, in PyTorch: groups of 8 partitions x 4 values, scale 2^(floor(log2 amax) - emax + 1)."""
    K = x.shape[0] // 4
    emax = {"float8_e4m3fn": 8, "float8_e5m2": 15}[kind]
    dt = {"float8_e4m3fn": torch.float8_e4m3fn, "float8_e5m2": torch.float8_e5m2}[kind]
    v = x.float().reshape(4, K // 8, 8, -1)  # (value i, group, partition in group, column)
    amax = v.abs().amax(dim=(0, 2), keepdim=True).clamp_min(2.0**-126)  # a zero group stays 0
    e = torch.floor(torch.log2(amax)) - emax + 1
    return ((v / torch.exp2(e)).to(dt).float() * torch.exp2(e)).reshape(4 * K, -1)
