"""nc_n_gather and topk (GpSimd Engine) against PyTorch (float32 and bfloat16 where the
instruction takes them), and their rules (errors naming the kernel line)."""

import math

import pytest
import torch
from nki_testing import on_dev, tile_kernel

import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
from torch_neuronx import nki


def run(body, *inputs):
    return tile_kernel(body)(*on_dev(*inputs)).cpu()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_nc_n_gather_matches_torch_gather(dtype):
    data = torch.randn(32, 4, 50).to(dtype)  # free dims flattened: 200 per partition
    idx = torch.randint(0, 200, (32, 3, 7), dtype=torch.int64)

    def body(d, i):
        out = nl.ndarray((32, 3, 7), dtype=d.dtype, buffer=nl.sbuf)
        nisa.nc_n_gather(dst=out, data=d, indices=i)
        return out

    out = run(body, data, idx.to(torch.uint32))
    ref = data.reshape(32, -1).gather(1, idx.reshape(32, -1)).reshape(32, 3, 7)
    assert torch.equal(out, ref)  # a gather moves bits: exact


def snake(x, n):
    """(P, cols) -> (P // 16, n): each 16-partition group read column by column."""
    G = x.shape[0] // 16
    return x.reshape(G, 16, -1).transpose(1, 2).reshape(G, -1)[:, :n]


@pytest.mark.parametrize("k,n", [(64, 1000), (20, 300), (8, 8)])
def test_topk_finds_the_k_largest_of_each_snake(k, n):
    cols = math.ceil(n / 16) + 2  # slots past n are ignored
    x = torch.randperm(128 * cols).float().reshape(128, cols).to(torch.bfloat16)

    def body(s):
        v = nl.ndarray((128, k), dtype=nl.bfloat16, buffer=nl.sbuf)
        i = nl.ndarray((128, k), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.memset(dst=v, value=0.0)
        nisa.memset(dst=i, value=0)
        nisa.topk(val_dst=v, idx_dst=i, src=s, n=n, sorted=True)
        both = nl.ndarray((128, 2 * k), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=both[:, 0:k], src=v)
        nisa.tensor_copy(dst=both[:, k : 2 * k], src=i)
        return both

    out = run(body, x)
    w = math.ceil(k / 16)
    vals = snake(out[:, :w], 16 * w)[:, :k]  # results come back in the snake layout
    idx = snake(out[:, k : k + w], 16 * w)[:, :k].long()
    src = snake(x.float(), n)
    ref = src.topk(k, dim=1).values
    torch.testing.assert_close(vals, ref)
    torch.testing.assert_close(src.gather(1, idx), ref)  # each index points at its value
    assert out[:, w:k].eq(0).all()  # only the first ceil(k / 16) columns are written


# ---- rules
def _raises(kernel, *inputs, match):
    with pytest.raises(nki.NkiValidationError, match=match) as e:
        nki.jit(kernel)(*on_dev(*inputs))
    assert "test_isa_gather_topk.py" in str(e.value)  # names the kernel line
    return str(e.value)


def test_gather_rules():
    def int32_index(a):
        d = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.sbuf)
        i = nl.ndarray((4, 2), dtype=nl.int32, buffer=nl.sbuf)
        nisa.nc_n_gather(dst=d[:, 0:2], data=d, indices=i)

    _raises(int32_index, torch.zeros(1, 1), match="indices must be uint32")

    def in_psum(a):
        d = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.psum)
        i = nl.ndarray((4, 2), dtype=nl.uint32, buffer=nl.sbuf)
        o = nl.ndarray((4, 2), dtype=nl.float32, buffer=nl.sbuf)
        nisa.nc_n_gather(dst=o, data=d, indices=i)

    _raises(in_psum, torch.zeros(1, 1), match="data must be in SBUF")

    def out_of_range(d, i):
        t = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.sbuf)
        j = nl.ndarray((4, 2), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=d)
        nisa.dma_copy(dst=j, src=i)
        o = nl.ndarray((4, 2), dtype=nl.float32, buffer=nl.sbuf)
        nisa.nc_n_gather(dst=o, data=t, indices=j)

    idx = torch.tensor([[0, 1], [2, 3], [4, 9], [5, 6]], dtype=torch.uint32)
    msg = _raises(out_of_range, torch.zeros(4, 8), idx, match="indices\\[2\\] holds 9")
    assert "past the 8 elements" in msg


def test_topk_rules():
    def fp32_src(a):
        s = nl.ndarray((16, 4), dtype=nl.float32, buffer=nl.sbuf)
        v = nl.ndarray((16, 8), dtype=nl.bfloat16, buffer=nl.sbuf)
        i = nl.ndarray((16, 8), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.topk(val_dst=v, idx_dst=i, src=s, n=64)

    _raises(fp32_src, torch.zeros(1, 1), match="src must be bfloat16")

    def not_16(a):
        s = nl.ndarray((8, 4), dtype=nl.bfloat16, buffer=nl.sbuf)
        v = nl.ndarray((8, 8), dtype=nl.bfloat16, buffer=nl.sbuf)
        i = nl.ndarray((8, 8), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.topk(val_dst=v, idx_dst=i, src=s, n=64)

    _raises(not_16, torch.zeros(1, 1), match="multiple of 16")

    def short_src(a):
        s = nl.ndarray((16, 4), dtype=nl.bfloat16, buffer=nl.sbuf)
        v = nl.ndarray((16, 8), dtype=nl.bfloat16, buffer=nl.sbuf)
        i = nl.ndarray((16, 8), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.topk(val_dst=v, idx_dst=i, src=s, n=100)

    _raises(short_src, torch.zeros(1, 1), match="needs ceil\\(n / 16\\) = 7 columns")

    def k_over_n(a):
        s = nl.ndarray((16, 4), dtype=nl.bfloat16, buffer=nl.sbuf)
        v = nl.ndarray((16, 20), dtype=nl.bfloat16, buffer=nl.sbuf)
        i = nl.ndarray((16, 20), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.topk(val_dst=v, idx_dst=i, src=s, n=10)

    _raises(k_over_n, torch.zeros(1, 1), match="k <= n")
