"""Every hardware rule the simulator enforces: each violation is an error naming the kernel
line and the limit."""

import pytest
import torch
from nki_testing import tile_kernel

import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
from torch_neuronx import nki

V = nki.NkiValidationError


def run(fn, *shapes, dtype=torch.float32):
    ins = [torch.randn(*s).to(dtype).to("neuron") for s in shapes] or [
        torch.zeros(1, 1, device="neuron")
    ]
    return nki.jit(fn)(*ins)


def raises(fn, *shapes, match, cls=V, line=None, dtype=torch.float32):
    with pytest.raises(cls, match=match) as e:
        run(fn, *shapes, dtype=dtype)
    msg = str(e.value)
    assert __file__.split("/")[-1] in msg, msg  # names the kernel's source file ...
    if line:
        assert line in msg, msg  # ... and its line
    return msg


# ---- partition dimension
def test_partition_dim_above_128():
    def k(a):
        nl.ndarray((256, 64), dtype=nl.float32, buffer=nl.sbuf)

    raises(
        k,
        match=r"partition dimension 256 .* exceeds the 128 partitions",
        line="nl.ndarray((256, 64), dtype=nl.float32, buffer=nl.sbuf)",
    )


def test_partition_dim_above_128_in_psum():
    def k(a):
        nl.ndarray((129, 4), dtype=nl.float32, buffer=nl.psum)

    raises(k, match=r"partition dimension 129 of PSUM")


# ---- PSUM tile size, banks and fp32 accumulation
def test_psum_tile_larger_than_a_partition():
    def k(a):
        nl.ndarray((128, 4097), dtype=nl.float32, buffer=nl.psum)

    raises(
        k,
        match=r"16388 bytes per partition, more than the 16384 bytes of one PSUM partition",
        cls=nki.NkiCapacityError,
    )


def _mm(
    stat_shape,
    mov_shape,
    dst_shape,
    dst_dtype=nl.float32,
    psum_shape=None,
    view=None,
    in_dtype=nl.bfloat16,
    mov_dtype=None,
    **kw,
):
    def k(a):
        s = nl.ndarray(stat_shape, dtype=in_dtype, buffer=nl.sbuf)
        m = nl.ndarray(mov_shape, dtype=mov_dtype or in_dtype, buffer=nl.sbuf)
        nisa.memset(dst=s, value=1.0)
        nisa.memset(dst=m, value=1.0)
        p = nl.ndarray(psum_shape or dst_shape, dtype=dst_dtype, buffer=nl.psum)
        nisa.nc_matmul(dst=p if view is None else view(p), stationary=s, moving=m, **kw)

    return k


def test_matmul_moving_free_size_above_one_psum_bank():
    raises(
        _mm((128, 128), (128, 1024), (128, 1024)),
        match=r"moving free size 1024 exceeds 512 .*one PSUM bank of 512 fp32",
    )


def test_matmul_stationary_free_size_above_128():
    raises(
        _mm((128, 256), (128, 512), (128, 512)),
        match=r"stationary free size 256 exceeds 128 .*at most 128x128",
    )


def test_matmul_contraction_above_128_partitions_is_caught_at_allocation():
    raises(_mm((200, 64), (200, 64), (64, 64)), match=r"partition dimension 200")


def test_matmul_output_crossing_a_psum_bank():
    raises(
        _mm(
            (128, 128), (128, 512), (128, 512), psum_shape=(128, 1024), view=lambda p: p[:, 256:768]
        ),
        match=r"crossing the 2048-byte bank boundary at 2048",
    )


def test_matmul_output_within_the_second_bank_is_fine():
    run(
        _mm(
            (128, 128),
            (128, 512),
            (128, 512),
            psum_shape=(128, 1024),
            view=lambda p: p[:, 512:1024],
        )
    )


def test_matmul_must_accumulate_in_fp32_psum():
    raises(
        _mm((128, 128), (128, 512), (128, 512), dst_dtype=nl.bfloat16),
        match=r"PSUM dst is bfloat16; matmul accumulates in fp32 and writes float32 on Trn2",
    )


def test_matmul_accumulate_into_uninitialised_psum():
    raises(
        _mm((128, 128), (128, 512), (128, 512), accumulate=True),
        match=r"accumulate=True.*no matmul has initialised it",
    )


def test_matmul_accumulate_onto_memset_psum():
    def k(a):
        s = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.memset(dst=s, value=1.0)
        p = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
        nisa.memset(dst=p, value=0.0)
        nisa.nc_matmul(dst=p, stationary=s, moving=s, accumulate=True)

    raises(k, match=r"last written by a non-matmul instruction.*undefined behaviour")


def test_matmul_operands_must_be_in_sbuf_and_dst_in_psum():
    def k(a):
        s = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.memset(dst=s, value=1.0)
        p = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
        nisa.nc_matmul(dst=p, stationary=s, moving=s)

    raises(k, match=r"nc_matmul: dst must be in PSUM, but it is in SBUF")


# ---- capacity of tiles alive at the same time
def _sbuf_tiles(n, sequential):
    def k(a):
        acc = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf, name="acc")
        nisa.memset(dst=acc, value=0.0)
        if sequential:  # each tile dies before the next is used
            for i in range(n):
                t = nl.ndarray((128, 16384), dtype=nl.float32, buffer=nl.sbuf, name=f"t{i}")
                nisa.memset(dst=t, value=1.0)
                nisa.tensor_reduce(dst=acc, op=nl.add, data=t, axis=1)
        else:
            tiles = [
                nl.ndarray((128, 16384), dtype=nl.float32, buffer=nl.sbuf, name=f"t{i}")
                for i in range(n)
            ]
            for t in tiles:
                nisa.memset(dst=t, value=1.0)
            for t in tiles:
                nisa.tensor_reduce(dst=acc, op=nl.add, data=t, axis=1)

    return k


def test_sbuf_capacity_of_live_tiles():
    msg = raises(
        _sbuf_tiles(4, False),
        match=r"SBUF capacity exceeded: .*256\.0 KiB per partition > "
        r"224\.0 KiB",
        cls=nki.NkiCapacityError,
    )
    for name in ("'t0'", "'t1'", "'t2'", "'t3'"):
        assert name in msg


def test_sbuf_tiles_that_are_not_alive_together_fit():
    run(_sbuf_tiles(4, True))


def test_psum_banks_of_live_tiles():
    def k(a):
        s = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.memset(dst=s, value=1.0)
        ps = [
            nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum, name=f"p{i}") for i in range(9)
        ]
        for p in ps:
            nisa.nc_matmul(dst=p, stationary=s, moving=s)
        out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
        for p in ps:
            nisa.tensor_copy(dst=out, src=p)

    raises(k, match=r"PSUM capacity exceeded: .*9 PSUM banks > 8", cls=nki.NkiCapacityError)


# ---- dtype rules
def test_matmul_rejects_integer_inputs():
    raises(
        _mm((128, 64), (128, 64), (64, 64), in_dtype=nl.int32),
        match=r"stationary is int32; the Tensor Engine takes",
    )


def test_matmul_fp32_pairs_only_with_fp32():
    raises(
        _mm((128, 64), (128, 64), (64, 64), in_dtype=nl.float32, mov_dtype=nl.bfloat16),
        match=r"float32/tfloat32 operand can only be paired with float32/tfloat32",
    )


def test_bitvec_operator_needs_integers():
    body = tile_kernel(lambda a, b: _tt(a, b, nl.bitwise_and))
    with pytest.raises(
        V, match=r"bitvec operator nl.bitwise_and needs integer tiles; data1 is float32"
    ):
        body(torch.randn(8, 8, device="neuron"), torch.randn(8, 8, device="neuron"))


def _tt(a, b, op):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=out, data1=a, data2=b, op=op)
    return out


def test_tensor_scalar_vector_operand_must_be_fp32():
    def body(a, col):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=out, data=a, op0=nl.multiply, operand0=col)
        return out

    with pytest.raises(V, match=r"operand0 must be float32.*got bfloat16"):
        tile_kernel(body)(
            torch.randn(8, 8, device="neuron"),
            torch.randn(8, 1, device="neuron").to(torch.bfloat16),
        )


def test_transpose_keeps_the_dtype():
    def body(a):
        out = nl.ndarray((a.shape[1], a.shape[0]), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_transpose(dst=out, data=a)
        return out

    with pytest.raises(V, match=r"dst is float32 but data is bfloat16"):
        tile_kernel(body)(torch.randn(64, 64, device="neuron").to(torch.bfloat16))


def test_activation_needs_an_activation_function():
    def body(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.activation(dst=out, op=nl.bitwise_and, data=a)
        return out

    with pytest.raises(V, match=r"nl.bitwise_and is not a Scalar Engine activation function"):
        tile_kernel(body)(torch.randn(8, 8, device="neuron"))


def test_engine_buffer_rules():
    def gpsimd_psum(a):
        p = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.psum)
        nisa.tensor_copy(dst=p, src=a, engine=nisa.engine.gpsimd)
        return p

    with pytest.raises(V, match=r"GpSimd Engine cannot access PSUM"):
        tile_kernel(gpsimd_psum)(torch.randn(8, 8, device="neuron"))

    def two_psum_inputs(a):
        p = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.psum)
        nisa.tensor_copy(dst=p, src=a)
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=out, data1=p, data2=p, op=nl.add)
        return out

    with pytest.raises(V, match=r"cannot both be in PSUM"):
        tile_kernel(two_psum_inputs)(torch.randn(8, 8, device="neuron"))

    def dma_to_psum(a):
        p = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.psum)
        nisa.dma_copy(dst=p, src=a)
        return p

    with pytest.raises(V, match=r"dma_copy: dst must be in SBUF or HBM"):
        tile_kernel(dma_to_psum)(torch.randn(8, 8, device="neuron"))


def test_partition_mismatch_between_operands():
    def body(a, b):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=out, data1=a, data2=b, op=nl.add)
        return out

    with pytest.raises(V, match=r"dst has 8 partitions but data2 has 4"):
        tile_kernel(body)(torch.randn(8, 8, device="neuron"), torch.randn(4, 16, device="neuron"))


def test_partition_broadcast_needs_broadcast_to():
    def body(a, row):
        return nl.add(a, row)

    with pytest.raises(V, match=r"broadcast along the partition dim.*nl.broadcast_to"):
        tile_kernel(body)(torch.randn(8, 8, device="neuron"), torch.randn(1, 8, device="neuron"))


# ---- out-of-bounds access
def test_slice_out_of_bounds():
    def k(a):
        t = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a[64:192, :])

    raises(
        k,
        (100, 64),
        match=r"slice 64:192 is out of bounds for dim 0 of size 100 .*needs a mask",
        line="src=a[64:192, :]",
    )


def test_index_expression_out_of_bounds_without_mask():
    def k(a):
        ix = nl.arange(128)[:, None]
        iy = nl.arange(64)[None, :]
        nl.load(a[ix, iy])

    raises(k, (100, 64), match=r"dim 0 spans \[0, 127\] but the dim has size 100 .*without a mask")


def test_index_expression_out_of_bounds_with_mask_is_fine():
    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        ix = nl.arange(128)[:, None]
        iy = nl.arange(64)[None, :]
        t = nl.load(a[ix, iy], mask=(ix < a.shape[0]))
        nl.store(out[ix, iy], value=t, mask=(ix < a.shape[0]))
        return out

    a = torch.randn(100, 64, device="neuron")
    torch.testing.assert_close(k(a).cpu(), a.cpu())


# ---- uninitialised memory reads as NaN / a fixed integer pattern
def test_uninitialised_reads_show():
    @nki.jit
    def k(a):
        f = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.sbuf)
        i = nl.ndarray((4, 8), dtype=nl.int32, buffer=nl.sbuf)
        out_f = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        out_i = nl.ndarray((4, 8), dtype=nl.int32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out_f, src=f)
        nisa.dma_copy(dst=out_i, src=i)
        partial = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=partial[:, 0:4], src=a[:, 0:4])  # half written
        return out_f, out_i, partial

    f, i, partial = k(torch.ones(4, 8, device="neuron"))
    assert torch.isnan(f.cpu()).all()
    assert (i.cpu() == int.from_bytes(b"\xa5" * 4, "little", signed=True)).all()
    assert torch.isnan(partial.cpu()[:, 4:]).all() and (partial.cpu()[:, :4] == 1).all()


# ---- version-specific instructions
def test_exponential_is_neuroncore_v4_only():
    def body(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.exponential(dst=out, src=a)
        return out

    with pytest.raises(V, match=r"only on NeuronCore-v4 \(Trn3\); this instance is Trn2"):
        tile_kernel(body)(torch.randn(8, 8, device="neuron"))


def test_unsupported_instruction_names_itself():
    # every 2.33 instruction is simulated; the stub a future unsimulated name would get
    from torch_neuronx.nki.isa import unsupported

    assert not unsupported.NOT_SIMULATED
    stub = unsupported._unsupported("future_op", " (reason)")
    assert stub.not_simulated
    with pytest.raises(nki.NkiUnsupportedError, match=r"nki.isa.future_op is not simulated"):
        stub(None)


def test_language_outside_a_kernel():
    with pytest.raises(nki.NkiError, match=r"only inside an @nki.jit kernel"):
        nl.ndarray((4, 4), dtype=nl.float32)
