"""The uninitialised pattern (NaN, 0xA5 bytes for integers) of new tiles and kernel-created HBM
tensors is written lazily (nki/coverage.py): never under writes that cover an allocation, but
still wherever a read, or the end of the kernel, finds nothing written. Each case compares
with the values PyTorch gives for the written part and checks the pattern in the rest."""

import torch

import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
from torch_neuronx import nki
from torch_neuronx.nki.coverage import Coverage
from torch_neuronx.nki.dtypes import uninit_value

INT_PATTERN = int.from_bytes(b"\xa5" * 4, "little", signed=True)


def test_tiled_output_written_in_full_is_never_filled():
    seen = {}

    @nki.jit
    def k(x):
        out = nl.ndarray((8, 12), dtype=nl.float32, buffer=nl.shared_hbm)
        for r in range(0, 8, 4):
            for c in range(0, 12, 6):
                t = nl.ndarray((4, 6), dtype=nl.float32, buffer=nl.sbuf)
                nisa.dma_copy(dst=t, src=x[r : r + 4, c : c + 6])
                nisa.dma_copy(dst=out[r : r + 4, c : c + 6], src=t)
                seen.setdefault("pending", []).append(out.storage.pending is not None)
        return out

    x = torch.randn(8, 12)
    torch.testing.assert_close(k(x.to("neuron")).cpu(), x)
    assert seen["pending"] == [True, True, True, False]  # the last tile completes the output


def test_unwritten_part_of_output_is_nan_at_the_end():
    @nki.jit
    def k(x):
        out = nl.ndarray((2, 8, 12), dtype=nl.float32, buffer=nl.shared_hbm)
        for r in range(0, 8, 4):
            t = nl.ndarray((4, 12), dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=x[r : r + 4, :])
            nisa.dma_copy(dst=out[1, r : r + 4, :], src=t)  # out[0] never written
        nisa.dma_copy(dst=out[0, 2:3, 4:8], src=x[0:1, 0:4])  # one row part of out[0]
        return out

    x = torch.randn(8, 12)
    out = k(x.to("neuron")).cpu()
    torch.testing.assert_close(out[1], x)
    torch.testing.assert_close(out[0, 2, 4:8], x[0, 0:4])
    rest = torch.ones(8, 12, dtype=torch.bool)
    rest[2, 4:8] = False
    assert torch.isnan(out[0][rest]).all()


def test_reading_a_partly_written_hbm_scratch_sees_nan_where_unwritten():
    @nki.jit
    def k(x):
        scratch = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.private_hbm)
        nisa.dma_copy(dst=scratch[:, 0:3], src=x[:, 0:3])
        t = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=scratch)  # a read of unwritten elements
        nisa.dma_copy(dst=scratch[:, 3:8], src=x[:, 3:8])  # written after the read
        out = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)
        return out

    x = torch.randn(4, 8)
    out = k(x.to("neuron")).cpu()
    torch.testing.assert_close(out[:, 0:3], x[:, 0:3])
    assert torch.isnan(out[:, 3:]).all()


def test_tile_written_in_pieces_reads_pattern_only_in_the_gap():
    @nki.jit
    def k(x):
        t = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.sbuf)
        i = nl.ndarray((4, 8), dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t[0:2, :], src=x[0:2, :])
        nisa.memset(dst=t[2:4, 0:5], value=3.0)  # t[2:4, 5:8] never written
        nisa.memset(dst=i[:, 0:2], value=7)
        out = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        out_i = nl.ndarray((4, 8), dtype=nl.int32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)
        nisa.dma_copy(dst=out_i, src=i)
        return out, out_i

    x = torch.randn(4, 8)
    out, out_i = (o.cpu() for o in k(x.to("neuron")))
    torch.testing.assert_close(out[0:2], x[0:2])
    assert (out[2:4, 0:5] == 3.0).all() and torch.isnan(out[2:4, 5:8]).all()
    assert (out_i[:, 0:2] == 7).all() and (out_i[:, 2:] == INT_PATTERN).all()


def test_overlapping_writes_that_cover_the_tile():
    @nki.jit
    def k(x):
        t = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=t[:, 0:6], value=1.0)
        nisa.dma_copy(dst=t[:, 3:8], src=x[:, 3:8])  # overlaps columns 3:6
        out = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)
        return out

    x = torch.randn(4, 8)
    want = torch.ones(4, 8)
    want[:, 3:] = x[:, 3:]
    torch.testing.assert_close(k(x.to("neuron")).cpu(), want)


def test_in_place_update_of_a_fresh_tile_reads_nan():
    """``t = t + x`` on a tile nothing wrote: the engine reads t's unwritten memory."""

    @nki.jit
    def k(x):
        t = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.sbuf)
        xt = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt, src=x)
        nisa.tensor_tensor(dst=t, data1=t, data2=xt, op=nl.add)
        out = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)
        return out

    assert torch.isnan(k(torch.randn(4, 8, device="neuron")).cpu()).all()


def test_matmul_into_half_a_fresh_psum_tile():
    @nki.jit
    def k(a, b):
        at = nl.ndarray((8, 4), dtype=nl.float32, buffer=nl.sbuf)
        bt = nl.ndarray((8, 6), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=at, src=a)
        nisa.dma_copy(dst=bt, src=b)
        ps = nl.ndarray((4, 12), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=ps[:, 0:6], stationary=at, moving=bt)
        nisa.nc_matmul(dst=ps[:, 0:6], stationary=at, moving=bt, accumulate=True)
        sb = nl.ndarray((4, 12), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=sb, src=ps)
        out = nl.ndarray((4, 12), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=sb)
        return out

    a, b = torch.randn(8, 4), torch.randn(8, 6)
    out = k(a.to("neuron"), b.to("neuron")).cpu()
    torch.testing.assert_close(out[:, 0:6], 2 * (a.t() @ b))
    assert torch.isnan(out[:, 6:]).all()


def test_a_reinterpreting_or_reshaped_write_fills_the_rest_first():
    @nki.jit
    def k(x):
        out = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out[0:1, :], src=x[0:1, :])  # recorded as a box
        nisa.dma_copy(dst=out.reshape((8, 4))[2:4, :], src=x[1:2, :])  # not a box of (4, 8)
        return out

    x = torch.randn(4, 8)
    out = k(x.to("neuron")).cpu()
    torch.testing.assert_close(out[0:2], x[0:2])
    assert torch.isnan(out[2:]).all()


def test_coverage_boxes():
    c = Coverage((2, 8, 12), (96, 12, 1))
    assert c.box((4, 12), (12, 1), 96 + 4 * 12) == ((1, 2), (4, 8), (0, 12))
    assert c.box((12, 4), (1, 12), 0) == ((0, 1), (0, 4), (0, 12))  # a transposed view
    assert c.box((4, 6), (12, 2), 0) is None  # stepped
    assert c.box((4, 12), (0, 1), 0) is None  # broadcast
    assert c.box((2, 12), (12, 1), 7 * 12) is None  # runs past dim 1
    assert not c.add(((0, 2), (0, 8), (0, 6)))
    assert not c.add(((0, 2), (0, 4), (4, 12)))  # overlaps the first: volume 160 < 192
    assert c.add(((0, 2), (4, 8), (6, 12)))  # 208 >= 192 and the union is everything
    assert uninit_value(torch.int32) == INT_PATTERN


def test_memset_of_a_whole_tile_is_pending_until_read():
    seen = []

    @nki.jit
    def k(x):
        t = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=t, value=2.5)
        seen.append(t.storage.pending)  # not written yet
        nisa.dma_copy(dst=t[:, 2:5], src=x[:, 0:3])  # a part on top of the value
        i = nl.ndarray((4, 8), dtype=nl.int32, buffer=nl.sbuf)
        nisa.memset(dst=i, value=-3)
        u = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=u, value=1.0)
        nisa.dma_copy(dst=u, src=x)  # overwritten in full: the value is never written
        seen.append(u.storage.pending)
        out = nl.ndarray((3, 4, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out[0], src=t)
        nisa.tensor_copy(dst=u, src=i)  # the int tile's value, read as it would be
        nisa.dma_copy(dst=out[1], src=u)
        nisa.dma_copy(dst=out[2], src=x)
        return out

    x = torch.randn(4, 8)
    out = k(x.to("neuron")).cpu()
    ref = torch.full((4, 8), 2.5)
    ref[:, 2:5] = x[:, 0:3]
    assert seen == [2.5, None]
    assert torch.equal(out[0], ref)
    assert torch.equal(out[1], torch.full((4, 8), -3.0))
    assert torch.equal(out[2], x)
