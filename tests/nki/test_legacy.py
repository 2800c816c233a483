"""The pre-0.2 language (torch_neuronx.nki.legacy, importable as neuronxcc.nki): old kernels
run with their old meaning, compared with PyTorch in float32 and bfloat16; 0.2+ kernels that
use an old construct get an error naming it, the kernel line and the replacement."""

import sys

import flash_attention_legacy
import numpy as np
import pytest
import torch

import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
import torch_neuronx.nki.legacy as lnki
import torch_neuronx.nki.legacy.isa as lisa
import torch_neuronx.nki.legacy.language as lnl
from torch_neuronx import nki
from torch_neuronx.nki import NkiValidationError

DEV = "neuron"
DTYPES = [torch.float32, torch.bfloat16]


def tol(dtype, f32=1e-5, bf16=2e-2):
    t = bf16 if dtype == torch.bfloat16 else f32
    return dict(rtol=t, atol=t)


def close(actual, expected, **kw):
    assert actual.device.type == "neuron"
    torch.testing.assert_close(actual.cpu().float(), expected.cpu().float(), **kw)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("causal", [False, True])
def test_legacy_flash_attention_forward_matches_sdpa(dtype, causal):
    q, k, v = (torch.randn(512, 64, dtype=dtype, device=DEV) for _ in range(3))
    out = flash_attention_legacy.flash_attention(q, k, v, causal)
    assert out.dtype == dtype and out.shape == (512, 64)
    close(out, flash_attention_legacy.reference(q, k, v, causal), **tol(dtype, 1e-4, 3e-2))
    rep = flash_attention_legacy.legacy_flash_fwd.last_report
    # the += onto PSUM is the matmul's own accumulation: no add instruction for it
    if not causal:  # 4 query tiles x 1 key tile x (1 QK^T + 4 PV chunks)
        assert rep.by_opcode["nc_matmul"] == 4 * (1 + 4)
    assert "tensor_tensor" not in rep.by_opcode or rep.by_opcode["tensor_tensor"] < 4 * 8


def test_install_as_neuronxcc_runs_an_old_kernel_with_its_own_imports(tmp_path, monkeypatch):
    # an old tutorial-style kernel: index expressions, a mask on the ragged last tile, np dtypes
    src = """
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa


@nki.jit
def rms_kernel(a, g):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    ix = nl.arange(128)[:, None]
    iy = nl.arange(a.shape[1])[None, :]
    g_tile = nl.load(g.reshape((1, g.shape[0]))[nl.arange(1)[:, None], iy])
    for i in nl.affine_range((a.shape[0] + 127) // 128):
        rows = i * 128 + ix < a.shape[0]
        x = nl.load(a[i * 128 + ix, iy], mask=rows)
        sq = nisa.activation(np.square, x, dtype=np.float32, mask=rows)
        ss = nisa.tensor_reduce(np.add, sq, axis=(1,), dtype=np.float32, mask=rows)
        r = nl.rsqrt(ss / a.shape[1])
        y = nl.multiply(nl.multiply(x, r), g_tile.broadcast_to((128, a.shape[1])), mask=rows)
        nl.store(out[i * 128 + ix, iy], value=y, mask=rows)
    return out
"""
    (tmp_path / "old_rms.py").write_text(src)
    monkeypatch.syspath_prepend(str(tmp_path))
    for m in ("neuronxcc", "neuronxcc.nki", "neuronxcc.nki.language", "neuronxcc.nki.isa"):
        monkeypatch.delitem(sys.modules, m, raising=False)
    lnki.install_as_neuronxcc()
    import old_rms

    for dtype in DTYPES:
        a = torch.randn(200, 256, dtype=dtype, device=DEV)
        g = torch.randn(256, dtype=dtype, device=DEV)
        out = old_rms.rms_kernel(a, g)
        af = a.cpu().float()
        ref = af * torch.rsqrt((af * af).mean(1, keepdim=True)) * g.cpu().float()
        close(out, ref, **tol(dtype, 1e-4, 3e-2))
    monkeypatch.delitem(sys.modules, "old_rms")


@pytest.mark.parametrize("dtype", DTYPES)
def test_block_dims_index_to_tiles_and_value_returning_isa(dtype):
    @lnki.jit
    def kernel(x):
        out = nl.ndarray((2, 128, 64), dtype=x.dtype, buffer=nl.shared_hbm)
        t = lnl.ndarray((2, lnl.par_dim(128), 64), dtype=x.dtype)
        assert t.shape == (2, 128, 64)
        for b in nl.affine_range(2):
            t[b, :, :] = nl.load(x[b])
        for b in nl.affine_range(2):
            y = lisa.tensor_scalar(t[b], np.multiply, 2.0, op1=np.add, operand1=1.0)
            e = lisa.activation(np.exp, y, scale=0.5, dtype=np.float32)
            s = lisa.tensor_tensor(e, t[b], np.subtract, dtype=x.dtype)
            nl.store(out[b], value=s)
        return out

    x = torch.randn(2, 128, 64, dtype=dtype, device=DEV)
    xf = x.cpu().float()
    close(kernel(x), torch.exp((2 * xf + 1) * 0.5) - xf, **tol(dtype, 1e-4, 5e-2))


@pytest.mark.parametrize("dtype", DTYPES)
def test_reductions_over_non_trailing_free_axes(dtype):
    @lnki.jit
    def kernel(x):
        out = nl.ndarray((128, 8), dtype=np.float32, buffer=nl.shared_hbm)
        out2 = nl.ndarray((128, 4), dtype=np.float32, buffer=nl.shared_hbm)
        t = nl.load(x)  # (128, 4, 8)
        nl.store(out, value=lnl.sum(t, axis=1, dtype=np.float32))  # the middle axis
        nl.store(out2, value=lisa.tensor_reduce(np.max, t, axis=(2,), dtype=np.float32))
        return out, out2

    x = torch.randn(128, 4, 8, dtype=dtype, device=DEV)
    s, m = kernel(x)
    close(s, x.cpu().float().sum(1), **tol(dtype, 1e-5, 1e-2))
    close(m, x.cpu().float().amax(2), **tol(dtype, 0, 0))


@pytest.mark.parametrize("dtype", DTYPES)
def test_masked_statistics_read_only_the_masked_elements(dtype):
    @lnki.jit
    def kernel(x):
        out = nl.ndarray((128, 2), dtype=np.float32, buffer=nl.shared_hbm)
        t = nl.load(x)  # (128, 256); the index expression spans 512 columns
        ip, jf = nl.arange(128)[:, None], nl.arange(512)[None, :]
        st = lisa.bn_stats(t[ip, jf], mask=(jf < 256), dtype=np.float32)
        nl.store(out, value=lisa.bn_aggr(st))
        return out

    x = torch.randn(128, 256, dtype=dtype, device=DEV)
    xf = x.cpu().float()
    ref = torch.stack([xf.mean(1), xf.var(1, unbiased=False)], 1)
    close(kernel(x), ref, **tol(dtype, 1e-4, 1e-2))


def _line_of(err, text):
    assert text in str(err.value), str(err.value)


def test_new_api_names_numpy_dtypes_and_operators_with_their_replacement():
    @nki.jit
    def np_dtype(x):
        t = nl.ndarray((128, 64), dtype=np.float32, buffer=nl.sbuf)  # the line named
        return t

    @nki.jit
    def np_op(x):
        t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        nisa.activation(dst=t, op=np.exp, data=t)
        return t

    x = torch.randn(128, 64, device=DEV)
    with pytest.raises(NkiValidationError) as e:
        np_dtype(x)
    for s in (
        "np.float32",
        "nl.float32",
        "neuronxcc.nki",
        "in np_dtype: t = nl.ndarray((128, 64), dtype=np.float32",
    ):
        _line_of(e, s)
    with pytest.raises(NkiValidationError) as e:
        np_op(x)
    for s in ("np.exp", "nl.exp", "op=np.exp"):
        _line_of(e, s)


def test_new_api_par_dim_names_the_block_dimension_replacement():
    @nki.jit
    def kernel(x):
        return nl.ndarray((2, nl.par_dim(128), 64), dtype=nl.float32)

    with pytest.raises(NkiValidationError) as e:
        kernel(torch.randn(1, device=DEV))
    for s in ("nl.par_dim(128)", "(P, blocks..., free...)", "Block Dimension Migration Guide"):
        _line_of(e, s)


def test_legacy_constructs_not_simulated_name_construct_line_and_replacement():
    @lnki.jit
    def arange_on_block(x):
        t = lnl.zeros((2, lnl.par_dim(128), 64), dtype=np.float32)
        return t[nl.arange(2)[:, None, None], :, :]

    @lnki.jit
    def loop_reduce(x):
        t = lnl.zeros((128, 64), dtype=np.float32)
        y = lnl.loop_reduce(t, np.add, loop_indices=())
        return lisa.activation(np.exp, y)

    @lnki.jit
    def whole_block_tensor(x):
        t = lnl.zeros((2, lnl.par_dim(128), 64), dtype=np.float32)
        return lisa.activation(np.exp, t)

    x = torch.randn(1, device=DEV)
    with pytest.raises(NkiValidationError) as e:
        arange_on_block(x)
    for s in ("block dim 0", "(P, B..., F...)", "return t[nl.arange"):
        _line_of(e, s)
    with pytest.raises(NkiValidationError, match="nl.loop_reduce") as e:
        loop_reduce(x)  # its result is assigned into an accumulator, not used as a tile
    _line_of(e, "return lisa.activation(np.exp, y)")
    with pytest.raises(NkiValidationError) as e:
        whole_block_tensor(x)
    for s in ("whole tensor with block dims", "lisa.activation(np.exp, t)"):
        _line_of(e, s)


@pytest.mark.parametrize("dtype", DTYPES)
def test_two_block_dims_and_psum_matmul_operands(dtype):
    @lnki.jit
    def kernel(x):
        out = nl.ndarray((2, 3, 64, 64), dtype=np.float32, buffer=nl.shared_hbm)
        t = lnl.ndarray((2, 3, lnl.par_dim(64), 64), dtype=x.dtype)
        for h in nl.affine_range(2):
            sub = t[h]  # (3, par_dim(64), 64): still one block dim
            assert sub.shape == (3, 64, 64)
            for i in nl.affine_range(3):
                sub[i, :, :] = nl.load(x[h, i])
        for h in nl.affine_range(2):
            for i in nl.affine_range(3):
                tt = lisa.nc_transpose(t[h, i])  # a Tensor Engine result in PSUM
                prod = lisa.nc_matmul(tt, t[h][i])  # old compiler: PSUM operand copied to SBUF
                nl.store(out[h, i], value=nl.copy(prod, dtype=np.float32))
        return out

    x = torch.randn(2, 3, 64, 64, dtype=dtype, device=DEV)
    xf = x.cpu().float()
    close(kernel(x), xf @ xf, **tol(dtype, 1e-4, 5e-2))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op,ref", [(np.add, torch.sum), (np.maximum, lambda v, dim: v.amax(dim))])
def test_loop_reduce_reduces_into_the_assigned_view(dtype, op, ref):
    # AWS's old flash_attn_bwd: acc[...] = nl.loop_reduce(psum_tile, op=np.add, loop_indices=...)
    @lnki.jit
    def kernel(x):
        out = nl.ndarray((128, 64), dtype=np.float32, buffer=nl.shared_hbm)
        acc = lnl.zeros((lnl.par_dim(128), 64), dtype=np.float32)
        i_p, i_f = nl.mgrid[0:128, 0:64]
        for k in nl.affine_range(4):
            t = lnl.load(x[k, i_p, i_f])
            p = lisa.tensor_copy(t, dtype=np.float32)
            acc[i_p, i_f] = lnl.loop_reduce(p, op=op, loop_indices=[k], dtype=np.float32)
        lnl.store(out[i_p, i_f], value=acc)
        return out

    x = torch.randn(4, 128, 64).to(dtype)
    got = kernel(x.to(DEV)).cpu()
    want = ref(torch.cat([torch.zeros(1, 128, 64), x.float()]), dim=0)
    tol = 1e-5 if dtype is torch.float32 else 2e-2
    torch.testing.assert_close(got, want, rtol=tol, atol=tol)
