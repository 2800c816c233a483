"""nonzero_with_count, sequence_bounds (GpSimd), local_gather (GpSimd) and
nc_stream_shuffle (Vector Engine) against PyTorch / AWS's NumPy references (float32 and
bfloat16 where the instruction takes them), and their rules (errors naming the kernel line)."""

import pytest
import torch
from nki_testing import on_dev, tile_kernel

import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
from torch_neuronx import nki


def run(body, *inputs):
    return tile_kernel(body)(*on_dev(*inputs)).cpu()


@pytest.mark.parametrize("dtype", [torch.float32, torch.int32])
def test_nonzero_with_count(dtype):
    x = (torch.rand(128, 40) < 0.3).to(dtype) * torch.randint(1, 5, (128, 40)).to(dtype)

    def body(s):
        out = nl.ndarray((128, 41), dtype=nl.int32, buffer=nl.sbuf)
        nisa.memset(dst=out, value=7)
        nisa.nonzero_with_count(dst=out, src=s, index_offset=16, padding_val=-1)
        return out

    out = run(body, x)
    for p in range(128):
        if p % 16:  # only each GpSimd core's first partition is written
            assert out[p].eq(7).all()
            continue
        nz = x[p].nonzero().flatten()
        ref = torch.full((41,), -1, dtype=torch.int32)
        ref[: len(nz)] = nz.int() + 16
        ref[40] = len(nz)
        assert torch.equal(out[p], ref), p


def test_nonzero_with_count_awss_example():
    x = torch.tensor([[0, 1, 1, 0, 0, 1, 0, 0]], dtype=torch.float32)

    def body(s):
        out = nl.ndarray((1, 9), dtype=nl.int32, buffer=nl.sbuf)
        nisa.nonzero_with_count(dst=out, src=s, index_offset=16, padding_val=-1)
        return out

    assert run(body, x).tolist() == [[17, 18, 21, -1, -1, -1, -1, -1, 3]]


def sequence_bounds_ref(seq):
    """AWS's NumPy reference (nki.isa.sequence_bounds page), one row."""
    n = len(seq)
    lo, hi = [0] * n, [0] * n
    lo[0] = 0 if seq[0] != 0 else n
    for i in range(1, n):
        lo[i] = n if seq[i] == 0 else (lo[i - 1] if seq[i] == seq[i - 1] else i)
    hi[-1] = n if seq[-1] != 0 else -1
    for i in range(n - 2, -1, -1):
        hi[i] = -1 if seq[i] == 0 else (hi[i + 1] if seq[i] == seq[i + 1] else i + 1)
    return [lo, hi]


@pytest.mark.parametrize("dtype", [torch.float32, torch.int32])
def test_sequence_bounds(dtype):
    torch.manual_seed(0)
    cases = [
        [0, 1, 1, 2, 2, 2, 0, 3, 3],  # AWS's example
        torch.randint(0, 32, (32,)).sort().values.tolist(),  # AWS's test: sorted IDs
        torch.randint(0, 3, (200,)).tolist(),  # runs, padding inside and at both ends
    ]
    for seq in cases:
        n = len(seq)
        x = torch.tensor([seq], dtype=dtype)

        def body(s, n=n):
            out = nl.ndarray((1, 2, n), dtype=s.dtype, buffer=nl.sbuf)
            nisa.sequence_bounds(dst=out, segment_ids=s)
            return out

        out = run(body, x)
        assert out.tolist() == [sequence_bounds_ref(seq)], seq


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("per_idx,valid", [(4, 64), (1, None), (2, 37)])
def test_local_gather_matches_awss_numpy_reference(dtype, per_idx, valid):
    src = (torch.rand(128, 512, 4) * 100).to(dtype)
    per_core = torch.randint(0, 512, (16, 4))
    index = per_core.repeat(8, 1)  # the same indices on the 8 GpSimd cores
    index[16:32] = torch.randint(0, 512, (16, 4))  # one core with its own
    n = valid or 64
    flat = src.reshape(128, -1)

    def body(s, i):
        out = nl.ndarray((128, n, per_idx), dtype=s.dtype, buffer=nl.sbuf)
        nisa.local_gather(
            dst=out, src_buffer=s, index=i, num_elem_per_idx=per_idx, num_valid_indices=valid
        )
        return out

    hw = index * per_idx  # element offsets (AWS's test passes index * num_elem_per_idx)
    out = run(body, flat, hw.to(torch.uint16))
    ref = torch.empty(128, n, per_idx, dtype=dtype)
    for core in range(8):
        rows = slice(16 * core, 16 * core + 16)
        idx = hw[rows].t().flatten()[:n]  # partition dim first (NumPy order='F')
        offs = idx[:, None] + torch.arange(per_idx)
        ref[rows] = flat[rows][:, offs]
    assert torch.equal(out, ref)  # a gather moves bits: exact


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_nc_stream_shuffle_awss_examples(dtype):
    rot = [(i - 1) % 32 for i in range(32)]
    a = torch.randn(128, 64).to(dtype)

    def in_place(x):  # example 1: partition i takes (i - 1) % 32, in place, one quadrant
        nisa.nc_stream_shuffle(src=x[0:32], dst=x[0:32], shuffle_mask=rot)
        return x

    ref = a.clone()
    ref[0:32] = a[rot]
    assert torch.equal(run(in_place, a), ref)

    def broadcast(x):  # example 2: one partition to 32
        b = nl.ndarray((32, 64), dtype=x.dtype, buffer=nl.sbuf)
        nisa.nc_stream_shuffle(src=x[0:1], dst=b, shuffle_mask=[0] * 32)
        return b

    assert torch.equal(run(broadcast, a), a[0:1].expand(32, 64))

    def quadrants(x):  # example 3: the same mask on every quadrant; 255 keeps the output
        b = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.sbuf)
        nisa.memset(dst=b, value=0.0)
        nisa.nc_stream_shuffle(src=x, dst=b, shuffle_mask=rot[:31] + [255])
        return b

    ref = torch.zeros(128, 64, dtype=dtype)
    for q in range(4):
        ref[32 * q : 32 * q + 31] = a[[32 * q + r for r in rot[:31]]]
    assert torch.equal(run(quadrants, a), ref)

    def second_quadrant(x):  # 32 active partitions may start at 32, 64 or 96
        b = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.sbuf)
        nisa.memset(dst=b, value=0.0)
        nisa.nc_stream_shuffle(src=x[64:96], dst=b[32:64], shuffle_mask=rot)
        return b

    ref = torch.zeros(128, 64, dtype=dtype)
    ref[32:64] = a[64:96][rot]
    assert torch.equal(run(second_quadrant, a), ref)


# ---- rules
def _raises(kernel, match):
    with pytest.raises(nki.NkiValidationError, match=match) as e:
        nki.jit(kernel)(torch.zeros(1, 1).to("neuron"))
    assert "test_isa_segments_shuffle.py" in str(e.value)  # names the kernel line


def _t(shape, dtype=nl.float32, buffer=nl.sbuf):
    return nl.ndarray(shape, dtype=dtype, buffer=buffer)


def test_rules():
    _raises(
        lambda a: nisa.nonzero_with_count(dst=_t((16, 8), nl.int32), src=_t((16, 8))),
        "one more element per partition",
    )
    _raises(
        lambda a: nisa.nonzero_with_count(dst=_t((16, 9), nl.float32), src=_t((16, 8))),
        "dst must be int32",
    )
    _raises(
        lambda a: nisa.nonzero_with_count(dst=_t((16, 9), nl.int32), src=_t((16, 8), nl.bfloat16)),
        "src must be float32 or int32",
    )
    _raises(
        lambda a: nisa.sequence_bounds(dst=_t((2, 2, 8)), segment_ids=_t((2, 8))),
        "must have 1 partition",
    )
    _raises(
        lambda a: nisa.sequence_bounds(dst=_t((1, 16)), segment_ids=_t((1, 8))),
        r"dst must have shape \(1, 2, 8\)",
    )
    _raises(
        lambda a: nisa.local_gather(
            dst=_t((16, 4)), src_buffer=_t((16, 8)), index=_t((16, 1), nl.int32)
        ),
        "index must be uint16",
    )
    _raises(
        lambda a: nisa.local_gather(
            dst=_t((8, 4)), src_buffer=_t((8, 8)), index=_t((8, 1), nl.uint16)
        ),
        "multiple of 16",
    )
    _raises(
        lambda a: nisa.local_gather(
            dst=_t((16, 48)),
            src_buffer=_t((16, 8)),
            index=_t((16, 1), nl.uint16),
            num_elem_per_idx=3,
        ),
        "num_elem_per_idx must be one of",
    )
    _raises(
        lambda a: nisa.local_gather(
            dst=_t((16, 17)),
            src_buffer=_t((16, 8)),
            index=_t((16, 1), nl.uint16),
            num_valid_indices=17,
        ),
        r"num_valid_indices must be an int in \[1, 16\]",
    )
    _raises(
        lambda a: nisa.nc_stream_shuffle(dst=_t((32, 8)), src=_t((32, 8)), shuffle_mask=[0] * 31),
        "list of 32 ints",
    )
    _raises(
        lambda a: nisa.nc_stream_shuffle(dst=_t((32, 8)), src=_t((32, 8)), shuffle_mask=[40] * 32),
        r"shuffle_mask\[0\] is 40",
    )
    _raises(
        lambda a: nisa.nc_stream_shuffle(
            dst=_t((32, 8), nl.bfloat16), src=_t((32, 8)), shuffle_mask=[0] * 32
        ),
        "must have the dtype of src",
    )

    def bad_start(a):
        t = _t((128, 8))
        nisa.nc_stream_shuffle(dst=t[32:96], src=t[0:64], shuffle_mask=list(range(32)))

    _raises(bad_start, r"dst starts at partition 32; with 64 active partitions")

    def past_src(a):
        t = _t((128, 8))
        nisa.nc_stream_shuffle(dst=t[0:32], src=t[0:4], shuffle_mask=list(range(32)))

    _raises(past_src, "copies partition 4 of src, which has 4 partitions")


def test_index_past_the_data_is_reported():
    def body(s, i):
        out = nl.ndarray((16, 2), dtype=s.dtype, buffer=nl.sbuf)
        nisa.local_gather(dst=out, src_buffer=s, index=i, num_elem_per_idx=2, num_valid_indices=1)
        return out

    idx = torch.full((16, 1), 7, dtype=torch.int64).to(torch.uint16)
    with pytest.raises(nki.NkiValidationError, match="reads 2 elements past the 8"):
        run(body, torch.zeros(16, 8), idx)
