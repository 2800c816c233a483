"""Dynamic and indirect addressing against PyTorch's gather/scatter (float32 and bfloat16):
``NkiTensor.select`` with a tile or register index, ``vector_select``, ``ap(scalar_offset=,
vector_offset=)`` on DMA (gather and scatter, ``oob_mode``), tensor indirection
(``NkiTensor.indirect``, NeuronCore-v4), ``rearrange``, and the cost of descriptor
generation."""

import embedding
import pytest
import torch
from nki_testing import on_dev

import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
from torch_neuronx import nki
from torch_neuronx.nki import cost
from torch_neuronx.nki.errors import NkiValidationError
from torch_neuronx.runtime import hardware

DTYPES = [torch.float32, torch.bfloat16]


@pytest.mark.parametrize("dtype", DTYPES)
def test_embedding_example_gathers_rows_and_skips_padding(dtype):
    table = torch.randn(1000, 96).to(dtype)
    ids = torch.randint(0, 1000, (300,), dtype=torch.int32)
    ids[::29] = -1  # padding ids: out of bounds, skipped (zero rows)
    ids[5] = 1000  # one past the end: skipped too
    out = embedding.embedding(*on_dev(table, ids))
    assert out.device.type == "neuron"
    assert torch.equal(out.cpu(), embedding.reference(table, ids))  # a gather moves bits


@pytest.mark.parametrize("dtype", DTYPES)
def test_embedding_example_under_torch_compile(dtype):
    table = torch.randn(200, 64).to(dtype)
    ids = torch.randint(0, 200, (130,), dtype=torch.int32)
    f = torch.compile(lambda t, i: embedding.embedding(t, i) * 2, backend="neuron")
    out = f(*on_dev(table, ids))
    assert torch.equal(out.cpu(), embedding.reference(table, ids) * 2)


@pytest.mark.parametrize("dtype", DTYPES)
def test_scatter_rows_by_id_matches_index_copy(dtype):
    rows = torch.randn(200, 48).to(dtype)
    ids = torch.randperm(500)[:200].to(torch.int32)
    out = torch.zeros(500, 48, dtype=dtype)
    got = embedding.nki_scatter_rows_kernel(*on_dev(rows, ids, out)).cpu()
    assert torch.equal(got, out.index_copy(0, ids.long(), rows))


def _gather_kernel(oob):
    @nki.jit
    def k(data, indices):
        P = indices.shape[0]
        idx = nl.ndarray((P, 1), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.dma_copy(dst=idx, src=indices)
        t = nl.ndarray((P,) + data.shape[1:], dtype=data.dtype, buffer=nl.sbuf)
        nisa.memset(dst=t, value=7.0)
        nisa.dma_copy(dst=t, src=data.vector_select(0, idx), oob_mode=oob)
        out = nl.ndarray(t.shape, dtype=data.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)
        return out

    return k


@pytest.mark.parametrize("dtype", DTYPES)
def test_vector_select_gathers_like_index_select(dtype):
    data = torch.randn(40, 6, 8).to(dtype)
    ind = torch.randint(0, 40, (128, 1))
    out = _gather_kernel(nisa.oob_mode.error)(*on_dev(data, ind.to(torch.int32))).cpu()
    assert torch.equal(out, data.index_select(0, ind[:, 0]))


def test_out_of_bounds_index_is_an_error_naming_the_line_or_skipped():
    data = torch.randn(40, 16)
    ind = torch.randint(0, 40, (64, 1))
    ind[3] = 40
    with pytest.raises(
        NkiValidationError, match=r"dynamic index 40 is out of bounds \[0, 40\)"
    ) as e:
        _gather_kernel(nisa.oob_mode.error)(*on_dev(data, ind.to(torch.int32)))
    assert "test_isa_indirect.py" in str(e.value) and "vector_select" in str(e.value)
    assert "oob_mode=nisa.oob_mode.skip" in str(e.value)
    out = _gather_kernel(nisa.oob_mode.skip)(*on_dev(data, ind.to(torch.int32))).cpu()
    ref = data[ind[:, 0].clamp(max=39)]
    ref[3] = 7.0  # the skipped row keeps what dst held
    assert torch.equal(out, ref)
    neg = ind.clone()
    neg[0] = -2  # the kernel's index tile is uint32: -2 arrives as 2**32 - 2
    with pytest.raises(NkiValidationError, match="dynamic index 4294967294"):
        _gather_kernel(nisa.oob_mode.error)(*on_dev(data, neg.to(torch.int32)))


def test_out_of_bounds_scatter_rows_are_skipped():
    @nki.jit
    def k(src, indices, out):
        P, F = src.shape
        idx = nl.ndarray((P, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=idx, src=indices)
        s = nl.ndarray((P, F), dtype=src.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=s, src=src)
        view = out.ap(pattern=[[F, P], [1, F]], vector_offset=idx, indirect_dim=0)
        nisa.dma_copy(dst=view, src=s, oob_mode=nisa.oob_mode.skip)
        return out

    src = torch.randn(16, 8)
    ids = torch.arange(16, dtype=torch.int32) * 2
    ids[[1, 7]] = torch.tensor([99, -1], dtype=torch.int32)
    out = torch.zeros(32, 8)
    got = k(*on_dev(src, ids.reshape(16, 1), out)).cpu()
    keep = torch.ones(16, dtype=torch.bool)
    keep[[1, 7]] = False
    assert torch.equal(got, out.index_copy(0, ids[keep].long(), src[keep]))


@pytest.mark.parametrize("dtype", DTYPES)
def test_dynamic_select_with_a_tile_or_a_register(dtype):
    @nki.jit
    def k(data, i):
        t = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=i)
        a = nl.ndarray(data.shape[1:], dtype=data.dtype, buffer=nl.sbuf)
        assert data.select(0, t).is_indirect() and not data.select(0, 1).is_indirect()
        nisa.dma_copy(dst=a, src=data.select(0, t))  # HBM, dim 0, index from SBUF
        r = nisa.register_alloc(t)  # the same index in a register
        b = nl.ndarray(data.shape[1:], dtype=data.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=b, src=data.select(0, r))
        c = nl.ndarray((data.shape[1], data.shape[3]), dtype=data.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=c, src=b.select(1, t))  # on-chip, a free dim
        out = nl.ndarray(c.shape, dtype=data.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=c)
        return out

    data = torch.randn(5, 16, 4, 8).to(dtype)
    out = k(*on_dev(data, torch.tensor([[3]], dtype=torch.int32))).cpu()
    assert torch.equal(out, data[3, :, 3, :])


def test_scalar_offset_is_read_when_the_instruction_runs():
    @nki.jit
    def k(data):
        n, F = data.shape
        out = nl.ndarray((n, F), dtype=data.dtype, buffer=nl.shared_hbm)
        r = nisa.register_alloc(0)
        # one view, built once: each DMA reads the register's value at that moment
        row = data.ap(pattern=[[F, 1], [1, F]], offset=0, scalar_offset=r, indirect_dim=0)
        for i in range(n):
            nisa.register_move(r, n - 1 - i)
            t = nl.ndarray((1, F), dtype=data.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=row)
            nisa.dma_copy(dst=out[i : i + 1, :], src=t)
        return out

    data = torch.randn(6, 10)
    assert torch.equal(k(data.to("neuron")).cpu(), data.flip(0))


def test_rearrange_is_the_einops_view():
    @nki.jit
    def k(x):
        t = nl.ndarray((128, 24), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        v = t.rearrange(("b", ("h", "w")), ("b", "w", "h"), {"h": 4})
        assert v.shape == (128, 6, 4)
        o = nl.ndarray((128, 6, 4), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=o, src=v)
        out = nl.ndarray((128, 6, 4), dtype=x.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=o)
        h = nl.ndarray((2, 3, 4), dtype=x.dtype, buffer=nl.shared_hbm)
        assert h.rearrange(("a", "b", "c"), ("a", "c", "b")).strides == (12, 1, 4)
        return out

    x = torch.randn(128, 24)
    assert torch.equal(k(x.to("neuron")).cpu(), x.reshape(128, 4, 6).permute(0, 2, 1))


def test_rules_of_dynamic_views():
    def run(body):
        @nki.jit
        def k(x):
            body(x)
            return x

        with pytest.raises(NkiValidationError) as e:
            k(torch.zeros(128, 8, device="neuron"))
        assert "test_isa_indirect.py" in str(e.value)
        return str(e.value)

    def on_chip_vector(x):
        t = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
        i = nl.ndarray((128, 1), dtype=nl.int32, buffer=nl.sbuf)
        t.vector_select(0, i)

    assert "only supported on HBM" in run(on_chip_vector)

    def float_index(x):
        i = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        x.vector_select(0, i)

    assert "must hold integers" in run(float_index)

    def partition_select(x):
        t = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
        i = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        t.select(0, i)

    assert "partition dim" in run(partition_select)

    def vector_on_compute(x):
        i = nl.ndarray((128, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.memset(dst=i, value=0)
        t = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=t, src=x.vector_select(0, i))

    assert "indirect (vector_offset) DMA view" in run(vector_on_compute)

    def reindirect(x):
        i = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        x.select(0, i)[0:2]

    assert "cannot be re-indirected" in run(reindirect)

    def ti_on_v3(x):
        t = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
        i = nl.ndarray((128, 1), dtype=nl.uint16, buffer=nl.sbuf)
        nisa.memset(dst=i, value=0)
        o = nl.ndarray((128, 16), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=o, src=t.indirect(i))

    assert "needs NeuronCore-v4" in run(ti_on_v3)


def test_indirect_dma_cost_has_descriptor_generation():
    data = torch.randn(64, 512)
    ind = torch.randint(0, 64, (128, 1)).to(torch.int32)
    k = _gather_kernel(nisa.oob_mode.error)
    k(*on_dev(data, ind))
    busy = k.last_report.modeled_busy
    assert busy.get("gpsimd", 0) > 0  # software DGE on the GpSimd Engine

    def dma_row(dynamic):
        @nki.jit
        def kk(x, i):
            t = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=i)
            s = nl.ndarray((64, 512), dtype=x.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=s, src=x.select(0, t) if dynamic else x[2])
            return x

        kk(*on_dev(torch.randn(4, 64, 512), torch.tensor([[2]], dtype=torch.int32)))
        return kk.last_report.modeled_seconds

    # the dynamic DMA waits for its index tile's load (one DMA latency), then the hardware
    # DGE (~600 ns) before its transfer; the static one starts at once
    wait = cost.HWDGE_SECONDS + float(hardware.DMA_FIXED_LATENCY)
    assert dma_row(True) - dma_row(False) == pytest.approx(wait, rel=1e-6)


def test_tensor_indirection_on_neuroncore_v4(py):
    py(
        """
        import pytest, torch
        from torch_neuronx import nki
        import torch_neuronx.nki.isa as nisa
        import torch_neuronx.nki.language as nl
        from torch_neuronx.nki.errors import NkiUnsupportedError, NkiValidationError

        def snake(idx, n):
            # offset i of group g: idx[16 g + i % 16, i // 16]
            P, K = idx.shape
            g = torch.arange(P)[:, None] // 16 * 16
            i = torch.arange(n)[None, :]
            return idx[g + i % 16, i // 16]

        def kernel(n):
            @nki.jit
            def k(x, idx):
                t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=t, src=x)
                i = nl.ndarray(idx.shape, dtype=nl.uint16, buffer=nl.sbuf)
                nisa.dma_copy(dst=i, src=idx)
                g = nl.ndarray((x.shape[0], n), dtype=x.dtype, buffer=nl.sbuf)
                nisa.tensor_copy(dst=g, src=t.indirect(i, num_elem=n))  # gather
                s = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
                nisa.memset(dst=s, value=0.0)
                nisa.tensor_copy(dst=s.indirect(i, num_elem=n), src=g)  # scatter back
                d = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
                nisa.tensor_tensor(dst=d, data1=s, data2=t, op=nl.subtract)
                out = nl.ndarray((x.shape[0], n + 40), dtype=x.dtype, buffer=nl.shared_hbm)
                nisa.dma_copy(dst=out[:, 0:n], src=g)
                nisa.dma_copy(dst=out[:, n:], src=s)
                return out
            return k

        for dtype in (torch.float32, torch.bfloat16):
            x = torch.randn(64, 4, 10).to(dtype)  # 40 free elements per partition
            # distinct offsets per group (a permutation), so the scatter is well defined
            idx = torch.stack([torch.randperm(40)[:32] for _ in range(4)]).reshape(4, 2, 16)
            idx = idx.transpose(1, 2).reshape(64, 2)  # rows 16g..16g+15 of group g, 2 columns
            n = 30
            out = kernel(n)(x.to("neuron"), idx.to(torch.uint16).to("neuron")).cpu()
            off = snake(idx.long(), n)
            gathered = x.reshape(64, 40).gather(1, off)
            assert torch.equal(out[:, :n], gathered)
            scattered = torch.zeros(64, 40, dtype=dtype).scatter(1, off, gathered)
            assert torch.equal(out[:, n:].reshape(64, 40), scattered)

        @nki.jit
        def elementwise(x, y, idx):
            a = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=a, src=x)
            b = nl.ndarray(y.shape, dtype=y.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=b, src=y)
            i = nl.ndarray(idx.shape, dtype=nl.uint16, buffer=nl.sbuf)
            nisa.dma_copy(dst=i, src=idx)
            n = idx.shape[1] * 16
            o = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
            nisa.memset(dst=o, value=0.0)
            nisa.tensor_tensor(dst=o.indirect(i), data1=a.indirect(i), data2=b[:, 0:n], op=nl.add)
            p = nl.ndarray((x.shape[0], n), dtype=nl.uint8, buffer=nl.sbuf)
            nisa.memset(dst=p, value=1)
            o2 = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
            nisa.memset(dst=o2, value=0.0)
            nisa.tensor_copy_predicated(dst=o2.indirect(i), src=b[:, 0:n], predicate=p)
            out = nl.ndarray((2,) + x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
            nisa.dma_copy(dst=out[0], src=o)
            nisa.dma_copy(dst=out[1], src=o2)
            return out

        x, y = torch.randn(32, 40), torch.randn(32, 40)
        idx = torch.stack([torch.randperm(40)[:32] for _ in range(2)])
        idx = idx.reshape(2, 2, 16).transpose(1, 2).reshape(32, 2)
        out = elementwise(x.to("neuron"), y.to("neuron"), idx.to(torch.uint16).to("neuron")).cpu()
        off = snake(idx.long(), 32)
        assert torch.equal(out[0], torch.zeros(32, 40).scatter(1, off, x.gather(1, off) + y[:, :32]))
        assert torch.equal(out[1], torch.zeros(32, 40).scatter(1, off, y[:, :32]))

        bad = torch.zeros(16, 1, dtype=torch.int64)
        bad[3] = 40
        with pytest.raises(NkiValidationError, match="offset 40 is outside the 40 free"):
            kernel(16)(torch.zeros(16, 4, 10).to("neuron"), bad.to(torch.uint16).to("neuron"))

        # the Tensor Engine groups 32 partitions: offset i of group g is idx[32 g + i % 32, i // 32]
        @nki.jit
        def mm(s_in, m_in, idx):
            s = nl.ndarray(s_in.shape, dtype=s_in.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=s, src=s_in)
            m = nl.ndarray(m_in.shape, dtype=m_in.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=m, src=m_in)
            i = nl.ndarray(idx.shape, dtype=nl.uint16, buffer=nl.sbuf)
            nisa.dma_copy(dst=i, src=idx)
            n = 32 * idx.shape[1]
            p = nl.ndarray((n, m_in.shape[1]), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul(dst=p, stationary=s.indirect(i, num_elem=n), moving=m)
            o = nl.ndarray(p.shape, dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_copy(dst=o, src=p)
            out = nl.ndarray(p.shape, dtype=nl.float32, buffer=nl.shared_hbm)
            nisa.dma_copy(dst=out, src=o)
            return out

        for dtype in (torch.float32, torch.bfloat16):
            S, M = torch.randn(128, 200).to(dtype), torch.randn(128, 96).to(dtype)
            idx = torch.randint(0, 200, (128, 2))
            out = mm(S.to("neuron"), M.to("neuron"), idx.to(torch.uint16).to("neuron")).cpu()
            g = torch.arange(128)[:, None] // 32 * 32
            i = torch.arange(64)[None, :]
            gathered = S.float().gather(1, idx[g + i % 32, i // 32])
            torch.testing.assert_close(out, gathered.t() @ M.float(), rtol=1e-4, atol=1e-4)

        @nki.jit
        def mm_dst(x):
            t = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.sbuf)
            nisa.memset(dst=t, value=0.0)
            i = nl.ndarray((128, 8), dtype=nl.uint16, buffer=nl.sbuf)
            nisa.memset(dst=i, value=0)
            p = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul(dst=p.indirect(i, num_elem=128), stationary=t, moving=t)
            return x

        with pytest.raises(NkiUnsupportedError, match="indirection on dst .* not simulated"):
            mm_dst(torch.zeros(1, 1).to("neuron"))
    """,
        env={"TORCH_NEURONX_EMULATED_INSTANCE": "trn3.3xlarge"},
    )


def test_out_of_bounds_scalar_offset_skips_the_whole_transfer():
    @nki.jit
    def k(data, i):
        t = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=i)
        s = nl.ndarray(data.shape[1:], dtype=data.dtype, buffer=nl.sbuf)
        nisa.memset(dst=s, value=-3.0)
        nisa.dma_copy(dst=s, src=data.select(0, t), oob_mode=nisa.oob_mode.skip)
        out = nl.ndarray(data.shape[1:], dtype=data.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=s)
        # scatter side: a skipped write leaves the tensor as it was
        nisa.dma_copy(dst=data.select(0, t), src=s, oob_mode=nisa.oob_mode.skip)
        return out

    data = torch.randn(4, 16, 8)
    dev = data.to("neuron")
    out = k(dev, torch.tensor([[4]], dtype=torch.int32).to("neuron")).cpu()
    assert torch.equal(out, torch.full((16, 8), -3.0)) and torch.equal(dev.cpu(), data)
    out = k(dev, torch.tensor([[1]], dtype=torch.int32).to("neuron")).cpu()
    assert torch.equal(out, data[1]) and torch.equal(dev.cpu(), data)  # row 1 written back


@pytest.mark.parametrize("cols", [1, 2])
def test_indirect_dma_transpose_matches_gather_then_transpose(cols):
    # AWS's DGE page: dst = src[indices.T.flatten()[:src.shape[0]], :].T
    P = 128 if cols > 1 else 64
    F = 96

    @nki.jit
    def k(data, indices):
        idx = nl.ndarray(indices.shape, dtype=nl.uint32, buffer=nl.sbuf)
        nisa.dma_copy(dst=idx, src=indices)
        t = nl.ndarray((F, P), dtype=data.dtype, buffer=nl.sbuf)
        src = data.ap(pattern=[[F, P], [1, F]], vector_offset=idx, indirect_dim=0)
        nisa.dma_transpose(dst=t, src=src)
        out = nl.ndarray((F, P), dtype=data.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)
        return out

    data = torch.randn(300, F).to(torch.bfloat16)
    ind = torch.randint(0, 300, (P if cols == 1 else 128, cols))
    out = k(*on_dev(data, ind.to(torch.int32))).cpu()
    rows = ind.t().reshape(-1)[:P]
    assert torch.equal(out, data[rows].t())
    with pytest.raises(NkiValidationError, match="2-byte dtype"):
        k(*on_dev(data.float(), ind.to(torch.int32)))


def test_scalar_offset_skips_only_the_rows_past_the_end():
    # the idiom of AWS's nki-library indexed_flatten: blocks written at a dynamic block offset,
    # the rows (DMA partitions) past the output's end skipped by oob_mode=skip
    @nki.jit
    def k(src, off, out):
        P, F = src.shape
        o = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=o, src=off)
        s = nl.ndarray((P, F), dtype=src.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=s, src=src)
        dst = out.ap(pattern=[[F, P], [1, F]], offset=0, scalar_offset=o, indirect_dim=0)
        nisa.dma_copy(dst=dst, src=s, oob_mode=nisa.oob_mode.skip)
        return out

    src = torch.randn(16, 8)
    for start, written in ((20, 12), (0, 16), (-1000000, 0), (40, 0)):
        out = torch.full((32, 8), -1.0)
        got = k(*on_dev(src, torch.tensor([[start]], dtype=torch.int32), out)).cpu()
        ref = out.clone()
        if written:
            ref[max(start, 0) : max(start, 0) + written] = src[:written]
        assert torch.equal(got, ref), start

    @nki.jit
    def k_err(src, off, out):
        P, F = src.shape
        o = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=o, src=off)
        s = nl.ndarray((P, F), dtype=src.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=s, src=src)
        nisa.dma_copy(dst=out.ap([[F, P], [1, F]], scalar_offset=o, indirect_dim=0), src=s)
        return out

    with pytest.raises(NkiValidationError, match="dynamic index 20"):  # oob_mode=error
        k_err(*on_dev(src, torch.tensor([[20]], dtype=torch.int32), torch.zeros(32, 8)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_language_load_and_store_take_indirect_views(dtype):
    @nki.jit
    def k(data, indices):
        idx = nl.load(indices)
        t = nl.load(data.vector_select(0, idx))  # one indirect DMA
        out = nl.ndarray((64, data.shape[1]), dtype=data.dtype, buffer=nl.shared_hbm)
        nl.store(out.vector_select(0, idx), t)  # scattered back to the same rows
        return out

    data = torch.randn(64, 32).to(dtype)
    ind = torch.randperm(64).reshape(64, 1).to(torch.int32)
    out = k(*on_dev(data, ind)).cpu()
    assert torch.equal(out, data)  # a permutation gathered, then scattered back
    assert k.last_report.by_opcode["dma_copy"] == 3


def test_dynamic_select_on_the_element_wise_engines():
    @nki.jit
    def k(x, i):
        t = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=i)
        b = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=b, src=x)
        o = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.memset(dst=o, value=0.0)
        nisa.tensor_scalar(dst=o.select(1, t), data=b.select(1, t), op0=nl.multiply, operand0=2.0)
        nisa.activation(dst=o.select(1, 0), op=nl.exp, data=b.select(1, t))
        three = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.memset(dst=three, value=3)
        nisa.memset(dst=o.select(1, three), value=7.0)
        out = nl.ndarray(o.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=o)
        return out

    x = torch.randn(16, 4, 8)
    out = k(*on_dev(x, torch.tensor([[2]], dtype=torch.int32))).cpu()
    ref = torch.zeros(16, 4, 8)
    ref[:, 2] = x[:, 2] * 2
    ref[:, 0] = x[:, 2].exp()
    ref[:, 3] = 7.0
    torch.testing.assert_close(out, ref)


@pytest.mark.parametrize(
    "offset,width,step,idx_dtype",
    [
        (0, 24, 1, nl.int32),  # whole rows, gathered straight into the tile
        (2 * 24 + 3, 5, 1, nl.int32),  # part of each row, a few rows in
        (1, 4, 3, nl.int32),  # a strided part of each row
        (22, 5, 1, nl.int32),  # each access spans two rows of the table
        (3, 7, 1, nl.int16),  # an index type torch does not index with
    ],
)
def test_indirect_gather_of_row_parts_matches_the_flat_positions(offset, width, step, idx_dtype):
    V, D, P = 50, 24, 32

    @nki.jit
    def k(data, indices):
        idx = nl.ndarray((P, 1), dtype=idx_dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=idx, src=indices)
        t = nl.ndarray((P, width), dtype=data.dtype, buffer=nl.sbuf)
        src = data.ap(
            pattern=[[D, P], [step, width]], offset=offset, vector_offset=idx, indirect_dim=0
        )
        nisa.dma_copy(dst=t, src=src)
        out = nl.ndarray((P, width), dtype=data.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)
        return out

    data = torch.randn(V, D)
    ind = torch.randint(0, V - 3, (P, 1))
    ind[0], ind[1] = 0, V - 4  # the extremes the bounds check looks at
    tdt = torch.int16 if idx_dtype is nl.int16 else torch.int32
    out = k(*on_dev(data, ind.to(tdt))).cpu()
    pos = offset + ind * D + torch.arange(width) * step
    assert torch.equal(out, data.reshape(-1)[pos])


def test_gather_with_an_index_tile_set_by_memset():
    # the memset's value is pending in the index tile until the gather reads the offsets
    @nki.jit
    def k(data):
        P, F = 16, data.shape[1]
        idx = nl.ndarray((P, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.memset(dst=idx, value=3)
        t = nl.ndarray((P, F), dtype=data.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=data.ap(pattern=[[F, P], [1, F]], vector_offset=idx))
        out = nl.ndarray((P, F), dtype=data.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)
        return out

    data = torch.randn(10, 8)
    assert torch.equal(k(*on_dev(data)).cpu(), data[3].expand(16, 8))
