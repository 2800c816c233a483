"""The NKI examples (examples/nki) on neuron tensors, each against its PyTorch reference in
float32 and bfloat16."""

import cumsum
import flash_attention
import matmul
import pytest
import rmsnorm
import selective_scan
import softmax
import tensor_add
import torch

DTYPES = [torch.float32, torch.bfloat16]


def tol(dtype, f32=1e-5, bf16=2e-2):
    t = bf16 if dtype == torch.bfloat16 else f32
    return dict(rtol=t, atol=t)


def close(actual, expected, **kw):
    assert actual.device.type == "neuron"
    torch.testing.assert_close(actual.cpu().float(), expected.cpu().float(), **kw)


@pytest.mark.parametrize("dtype", DTYPES)
def test_tensor_add(dtype):
    a = torch.randn(300, 1100, dtype=dtype, device="neuron")
    b = torch.randn(300, 1100, dtype=dtype, device="neuron")
    out = tensor_add.tensor_add(a, b)
    assert out.dtype == dtype and out.shape == a.shape
    close(out, tensor_add.reference(a, b), rtol=0, atol=0)  # one rounding, same as torch


@pytest.mark.parametrize("dtype", DTYPES)
def test_tiled_matmul_accumulates_in_psum(dtype):
    a = torch.randn(200, 300, dtype=dtype, device="neuron")
    b = torch.randn(300, 700, dtype=dtype, device="neuron")
    out = matmul.matmul(a, b)
    close(out, matmul.reference(a, b), **tol(dtype, 1e-4))
    report = matmul.nki_matmul_tiled.last_report
    # M: 2 tiles x N: 2 tiles x K: 3 matmuls accumulated per output tile
    assert report.by_opcode["nc_matmul"] == 12
    assert report.instructions["tensor"] == 12
    assert report.tensor_flops == 2 * 200 * 300 * 700


@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax(dtype):
    x = torch.randn(300, 1000, dtype=dtype, device="neuron") * 4
    close(softmax.softmax(x), softmax.reference(x), **tol(dtype, 1e-5, 2e-2))


@pytest.mark.parametrize("dtype", DTYPES)
def test_rmsnorm_forward_and_backward(dtype):
    x = torch.randn(300, 256, dtype=dtype, device="neuron", requires_grad=True)
    w = (torch.rand(256, dtype=dtype, device="neuron") + 0.5).requires_grad_()
    y = rmsnorm.rms_norm(x, w)
    y_ref = rmsnorm.reference(x, w)
    close(y, y_ref, **tol(dtype, 1e-5))
    gy = torch.randn_like(y)
    gx, gw = torch.autograd.grad(y, (x, w), gy)
    gx_ref, gw_ref = torch.autograd.grad(y_ref, (x, w), gy)
    close(gx, gx_ref, **tol(dtype, 1e-4))
    # dw sums 300 rows: compare with a tolerance that scales with the sum
    close(gw, gw_ref, **tol(dtype, 1e-4, 1e-1))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_forward(dtype, causal):
    q, k, v = (torch.randn(512, 64, dtype=dtype, device="neuron") for _ in range(3))
    out = flash_attention.flash_attention(q, k, v, causal)
    close(out, flash_attention.reference(q, k, v, causal), **tol(dtype, 1e-4, 3e-2))


def test_flash_attention_several_key_tiles_causal_skips_upper_tiles():
    q, k, v = (torch.randn(1024, 32, device="neuron") for _ in range(3))
    out = flash_attention.flash_attention(q, k, v, True)
    close(out, flash_attention.reference(q, k, v, True), rtol=1e-4, atol=1e-4)
    causal = flash_attention.nki_flash_attention_fwd.last_report
    flash_attention.flash_attention(q, k, v, False)
    full = flash_attention.nki_flash_attention_fwd.last_report
    # 8 query tiles x 2 key tiles; causal skips the key tile above the diagonal for 4 of them
    assert full.by_opcode["dma_transpose"] == 8 + 16
    assert causal.by_opcode["dma_transpose"] == 8 + 12
    assert causal.tensor_flops < full.tensor_flops


@pytest.mark.parametrize("dtype", DTYPES)
def test_cumsum_scans_chunks_with_a_carry(dtype):
    x = torch.randn(200, 1300, dtype=dtype, device="neuron")  # ragged rows and chunks
    out = cumsum.cumsum(x)
    assert out.dtype == dtype and out.shape == x.shape
    close(out, cumsum.reference(x), **tol(dtype, 1e-4))
    assert cumsum.nki_cumsum_kernel.last_report.by_opcode["tensor_tensor_scan"] == 6


@pytest.mark.parametrize("dtype", DTYPES)
def test_selective_scan_matches_the_step_by_step_recurrence(dtype):
    args = selective_scan.inputs(dtype=dtype)
    out = selective_scan.selective_scan(*args)
    assert out.dtype == dtype and out.shape == args[1].shape
    close(out, selective_scan.reference(*args), **tol(dtype, 1e-4, 3e-2))
