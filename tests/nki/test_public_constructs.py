"""Constructs that AWS's public NKI kernels use and that stopped them here before, each in a
small kernel of our own (measured on the real kernels with torch_neuronx/tools/nki_public_run.py;
docs/nki.md, "Public kernels, measured"). Old-language (``neuronxcc.nki``) kernels run through
``torch_neuronx.nki.legacy``; each result is compared with torch."""

import sys

import numpy as np
import pytest
import torch

import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
import torch_neuronx.nki.legacy as lnki
import torch_neuronx.nki.legacy.compiler as ncc
import torch_neuronx.nki.legacy.isa as lisa
import torch_neuronx.nki.legacy.language as lnl
from torch_neuronx import nki

DEV = "neuron"


def _dev(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(*shape, generator=g) * 2 - 1).to(DEV)


def test_neuronxcc_typing_is_importable(monkeypatch):
    for m in ("neuronxcc", "neuronxcc.nki", "neuronxcc.nki.typing"):
        monkeypatch.delitem(sys.modules, m, raising=False)
    lnki.install_as_neuronxcc()
    import neuronxcc.nki.typing as nt
    from neuronxcc.nki.typing import tensor

    assert nt.tensor is tensor and tensor[128, 512] is tensor
    assert lnki.typing is nt


def test_mgrid_names_its_axes():
    @lnki.jit
    def copy_rows(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        g = lnl.mgrid[0:64, 0:32]
        t = lnl.load(x[g.p, g.x])
        lnl.store(out[g.p, g.x], value=t)
        return out

    x = _dev(64, 32)
    assert torch.equal(copy_rows(x).cpu(), x.cpu())
    with pytest.raises(nki.NkiValidationError, match="names axis 2"):
        _ = lnl.mgrid[0:4, 0:4].y


def test_legacy_accumulate_into_index_expression_of_psum():
    # psum[ip, jf] += nisa.nc_matmul(...), accumulated over two K tiles
    @lnki.jit
    def mm(aT, b):
        out = nl.ndarray((128, 256), dtype=np.float32, buffer=nl.shared_hbm)
        ps = lnl.zeros((lnl.par_dim(128), 256), dtype=np.float32, buffer=nl.psum)
        ip, jf = nl.arange(128)[:, None], nl.arange(256)[None, :]
        for k in nl.affine_range(2):
            ta = lnl.load(aT[k * 128 + ip, nl.arange(128)[None, :]])
            tb = lnl.load(b[k * 128 + ip, jf])
            ps[ip, jf] += lisa.nc_matmul(moving=tb, stationary=ta)
        lnl.store(out, lnl.copy(ps, dtype=np.float32))
        return out

    a, b = _dev(128, 256), _dev(256, 256, seed=1)
    got = mm(a.cpu().T.contiguous().to(DEV), b).cpu()
    torch.testing.assert_close(got, a.cpu() @ b.cpu(), atol=1e-4, rtol=1e-4)
    assert mm.last_report.by_opcode.get("tensor_tensor", 0) == 0  # the matmul's own accumulation


def test_legacy_one_dimensional_load_is_a_partition_column():
    # A[c0:c1, j] (an integer index drops the free dim) loads as a (P, 1) column, used as a
    # per-partition activation scale
    @lnki.jit
    def scaled_exp(x, A):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        col = lnl.load(A[0:128, 3])
        y = lisa.activation(op=np.exp, data=lnl.load(x), scale=col)
        lnl.store(out, value=y)
        return out

    x, A = _dev(128, 64), _dev(128, 8, seed=1)
    want = torch.exp(x.cpu() * A.cpu()[:, 3:4])
    torch.testing.assert_close(scaled_exp(x, A).cpu(), want, atol=1e-5, rtol=1e-5)

    @nki.jit
    def new_api(A):  # NKI 0.2+: still an error naming the 2-D replacement
        nl.load(A[0:128, 3])

    with pytest.raises(nki.NkiValidationError, match="at least 2-D"):
        new_api(_dev(128, 8))


def test_psum_block_dims_are_tiles_with_their_own_live_ranges():
    # 4 x 4 blocks of one bank each (16 banks > PSUM's 8); one block alive at a time
    @lnki.jit
    def blocks(x):
        out = nl.ndarray((4, 4, 128, 512), dtype=np.float32, buffer=nl.shared_hbm)
        ps = lnl.ndarray((4, 4, lnl.par_dim(128), 512), dtype=np.float32, buffer=nl.psum)
        t = lnl.load(x)
        for i in nl.affine_range(4):
            for j in nl.affine_range(4):
                # first += into an untouched PSUM tile writes (as onto zeros)
                ps[i, j] += lisa.nc_matmul(stationary=t[:, 0:128], moving=t)
                lnl.store(out[i, j], value=lnl.copy(ps[i, j], dtype=np.float32) * float(i + j))
        return out

    x = _dev(128, 512)
    xc = x.cpu()
    got = blocks(x).cpu()
    prod = xc[:, 0:128].T @ xc
    for i in range(4):
        for j in range(4):
            torch.testing.assert_close(got[i, j], prod * (i + j), atol=1e-3, rtol=1e-4)
    with pytest.raises(nki.NkiValidationError, match="index every block dim with an integer"):

        @lnki.jit
        def sliced(x):
            ps = lnl.zeros((2, lnl.par_dim(128), 512), dtype=np.float32, buffer=nl.psum)
            lnl.copy(ps[0:2])

        sliced(x)


def test_psum_and_sbuf_direct_allocations_are_different_memories():
    @lnki.jit
    def k(x):
        out = nl.ndarray((128, 128), dtype=np.float32, buffer=nl.shared_hbm)
        s = lnl.ndarray(
            (lnl.par_dim(128), 128), dtype=x.dtype, buffer=ncc.sbuf.mod_alloc(base_addr=0)
        )
        s[...] = lnl.load(x)
        ps = lnl.ndarray(
            (2, lnl.par_dim(128), 128), dtype=np.float32, buffer=ncc.psum.mod_alloc(base_bank=0)
        )
        ps[0] = lisa.nc_matmul(s, s)  # PSUM bank 0, byte 0: the same address as s in SBUF
        lnl.store(out, value=lnl.copy(ps[0], dtype=np.float32))
        return out

    x = _dev(128, 128)
    torch.testing.assert_close(k(x).cpu(), x.cpu().T @ x.cpu(), atol=1e-4, rtol=1e-4)


def test_old_isa_names_and_forms():
    @lnki.jit
    def k(x):
        out = nl.ndarray((128, 64), dtype=np.float32, buffer=nl.shared_hbm)
        mx = nl.ndarray((128, 1), dtype=np.float32, buffer=nl.sbuf)
        t = lnl.load(x)
        y = lisa.tensor_scalar_reduce(
            data=t, op0=np.multiply, operand0=2.0, reduce_op=np.max, reduce_res=mx
        )
        z = lisa.tensor_tensor(
            y, mx.broadcast_to((128, 64)), op=np.subtract, engine=lisa.vector_engine
        )
        lnl.store(out, value=z)
        return out

    x = _dev(128, 64)
    y = 2 * x.cpu()
    torch.testing.assert_close(k(x).cpu(), y - y.max(1, keepdim=True).values)
    assert lisa.scalar_engine is nisa.engine.scalar and lisa.gpsimd_engine is nisa.engine.gpsimd
    assert nisa.get_nc_version() >= nisa.nc_version.gen3  # ordered, as kernels compare them
    assert lnl.finfo(lnl.float32).min == torch.finfo(torch.float32).min


def test_old_matmul_takes_a_psum_transpose():
    # nl.matmul(scores, nl.transpose(v)): the transpose's PSUM result is copied to SBUF first
    @lnki.jit
    def k(a, v):
        out = nl.ndarray((128, 128), dtype=np.float32, buffer=nl.shared_hbm)
        vt = lnl.transpose(lnl.load(v))
        r = lnl.matmul(lnl.load(a), vt, transpose_x=False)
        lnl.store(out, value=lnl.copy(r, dtype=np.float32))
        return out

    a, v = _dev(128, 128), _dev(128, 128, seed=1)
    torch.testing.assert_close(k(a, v).cpu(), a.cpu() @ v.cpu().T, atol=1e-4, rtol=1e-4)


def test_numpy_integers_as_bounds_indices_and_operands():
    @lnki.jit
    def k(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        n = np.int32(2)
        for i in lnl.sequential_range(n, directives=ncc.no_reorder()):
            ip, jf = nl.arange(64)[:, None], nl.arange(32)[None, :]
            t = lnl.load(x[np.int32(64) * i + ip, jf])
            lnl.store(out[i * 64 + ip, jf], value=lnl.divide(t, np.int32(4)))
        return out

    x = _dev(128, 32)
    torch.testing.assert_close(k(x).cpu(), x.cpu() / 4)
    with ncc.no_reorder():
        pass


def test_compiler_decorator_over_baremetal_and_mod_alloc_without_blocks():
    @ncc.skip_middle_end_transformations
    @lnki.baremetal(save_neff_name="unused.neff")
    def k(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        # num_free_tiles=(n,) on a tensor without block dims: the tensor at base_addr
        t = lnl.ndarray(
            (lnl.par_dim(128), 2, 64),
            dtype=x.dtype,
            buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2,)),
        )
        t[...] = lnl.load(x)
        lnl.store(out, value=t)
        return out

    assert k.__name__ == "k"
    x = np.random.RandomState(0).rand(128, 2, 64).astype(np.float32)
    with pytest.warns(UserWarning, match="save_neff_name"):
        got = k(x)
    np.testing.assert_array_equal(got, x)


def test_iota_of_an_mgrid_expression_spans_the_grid():
    # NKI's mgrid is dense: iota(3 * g.y + g.z) over a 4-axis grid is a tile of the grid's shape
    @lnki.jit
    def k():
        out = nl.ndarray((8, 5, 3, 3), dtype=np.int32, buffer=nl.shared_hbm)
        g = lnl.mgrid[0:8, 0:5, 0:3, 0:3]
        t = lisa.iota(3 * g.y + g.z, dtype=np.int32)
        assert t.shape == (8, 5, 3, 3)
        lnl.store(out, value=t)
        return out

    want = (3 * torch.arange(3)[:, None] + torch.arange(3)[None, :]).expand(8, 5, 3, 3)
    assert torch.equal(k().cpu(), want.to(torch.int32))


def test_hbm_row_gather_by_an_sbuf_index_tile_keeps_the_mask():
    # hbm[b, rows_tile, i_f]: each partition reads the row its (P, 1) integer tile names (old
    # kernels' indirect DMA); partitions past the valid rows are masked off, and their index
    # values (out of range) must not be read
    n_rows, n_valid = 40, 100

    @lnki.jit
    def gather_rows(x):
        out = nl.ndarray((2, 128, 8), dtype=x.dtype, buffer=nl.shared_hbm)
        ip, jf = nl.arange(128)[:, None], nl.arange(8)[None, :]
        for b in lnl.affine_range(2):
            pos = lisa.iota(ip, dtype=nl.int32)
            rows = (
                lnl.mod(pos * 7, n_rows, dtype=nl.int32)
                + lnl.floor(pos / n_valid, dtype=nl.int32) * 1000
            )  # rows >= n_valid point far outside: only the mask keeps them out
            valid = ip < n_valid
            t = lnl.load(x[b, rows, jf], mask=valid)
            lnl.store(out[b, ip, jf], value=t, mask=valid)
        return out

    x = _dev(2, n_rows, 8)
    got = gather_rows(x).cpu()
    want = x.cpu()[:, (torch.arange(n_valid) * 7) % n_rows]
    torch.testing.assert_close(got[:, :n_valid], want, rtol=0, atol=0)


def test_index_tile_refused_on_chip_and_when_not_one_column():
    @lnki.jit
    def on_chip(x):
        out = nl.ndarray((128, 8), dtype=x.dtype, buffer=nl.shared_hbm)
        ip, jf = nl.arange(128)[:, None], nl.arange(8)[None, :]
        s = lnl.load(x[ip, jf])
        rows = lisa.iota(ip, dtype=nl.int32)
        lnl.store(out[ip, jf], value=lnl.copy(s[rows, jf]))
        return out

    with pytest.raises(nki.NkiValidationError, match="only HBM tensors take an index tile"):
        on_chip(_dev(128, 8))

    @lnki.jit
    def wide(x):
        out = nl.ndarray((128, 8), dtype=x.dtype, buffer=nl.shared_hbm)
        ip, jf = nl.arange(128)[:, None], nl.arange(8)[None, :]
        rows = lisa.iota(ip + jf, dtype=nl.int32)
        lnl.store(out[ip, jf], value=lnl.load(x[rows, jf]))
        return out

    with pytest.raises(nki.NkiValidationError, match=r"must be \(P, 1\)"):
        wide(_dev(200, 8))


def test_legacy_bfloat16_is_torch_bfloat16_but_numpy_gets_a_named_error():
    # old kernels size buffers with np.dtype(nl.bfloat16); NumPy has no bfloat16 here
    assert lnl.bfloat16 == torch.bfloat16 and torch.bfloat16 == lnl.bfloat16
    assert {torch.bfloat16: 1}[lnl.bfloat16] == 1 and lnl.bfloat16 != torch.float16

    @lnki.jit
    def cast(x):
        out = nl.ndarray(x.shape, dtype=lnl.bfloat16, buffer=nl.shared_hbm)
        ip, jf = nl.arange(128)[:, None], nl.arange(16)[None, :]
        t = lnl.load(x[ip, jf], dtype=lnl.bfloat16)
        lnl.store(out[ip, jf], value=t)
        return out

    x = _dev(128, 16)
    got = cast(x)
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got.cpu(), x.cpu().to(torch.bfloat16), rtol=0, atol=0)

    @lnki.jit
    def sized(x):
        _ = np.dtype(lnl.bfloat16).itemsize
        return x

    with pytest.raises(
        nki.NkiUnsupportedError,
        match=r"(?s)np\.dtype\(nl\.bfloat16\).*test_public_constructs.py:\d+ in sized",
    ):
        sized(_dev(128, 16))


def test_float8_e4m3_stays_apart_from_torch_float8_e4m3fn():
    # Trn1/Trn2's FP8 E4M3 is the IEEE-style format (infinities, max 240); torch's
    # float8_e4m3fn (no infinities, max 448) is a different format, native only from Trn3
    # (docs/decisions.md): a kernel asserting `x.dtype == nl.float8_e4m3` on a float8_e4m3fn
    # tensor is told the truth, not that the two are one type
    assert nl.float8_e4m3 != torch.float8_e4m3fn and torch.float8_e4m3fn != nl.float8_e4m3
    assert lnl.float8_e4m3 != lnl.float8_e4m3fn
    # stored in e4m3fn bits: the two formats encode every |x| <= 240 the same way
    from torch_neuronx.nki import dtypes

    assert dtypes.storage_dtype(nl.float8_e4m3) is torch.float8_e4m3fn
