"""nki.language: tensor views and indexing, creation, math, reductions, legacy index
expressions with masks, and the language-level helpers (softmax, matmul, transpose, where)."""

import pytest
import torch
from nki_testing import on_dev, tile_kernel

import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
from torch_neuronx import nki


def check(body, *inputs, expected, **tol):
    out = tile_kernel(body)(*on_dev(*inputs))
    torch.testing.assert_close(
        out.cpu().float(), expected.float(), **(tol or dict(rtol=1e-5, atol=1e-5))
    )


def test_view_metadata_follows_the_nki_model():
    seen = {}

    @nki.jit
    def k(h):
        t = nl.ndarray((64, 64, 64), dtype=nl.float32, buffer=nl.sbuf)
        seen["int_partition"] = t[0, 0, 10].shape
        seen["free_int"] = t[:, 0].shape
        seen["keep_2d"] = t[:, 0, 10].shape
        seen["ellipsis"] = t[0, ..., :].shape
        seen["step"] = t[:, :, ::2].shape
        u = t.reshape((64, 4096))
        seen["strides"] = (u.shape, u.strides, u.offset, t[1:3].offset)
        t3 = nl.ndarray((128, 4, 16), dtype=nl.float32, buffer=nl.sbuf)
        seen["permute"] = t3[0:64, :, :].permute((0, 2, 1))[:, 0, :].shape
        seen["hbm_int"] = h[0].shape
        seen["broadcast"] = nl.ndarray((128, 1, 64), dtype=nl.float32).broadcast(1, 8).strides
        seen["view"] = nl.ndarray((128, 64), dtype=nl.float32).view(nl.uint8).shape
        seen["ap"] = (
            nl.ndarray((128, 1024), dtype=nl.float16).ap(pattern=[(1024, 128), (2, 512)]).shape
        )
        seen["contig"] = (t.is_contiguous(), t[:, :, ::2].is_contiguous())
        seen["pattern"] = nl.ndarray((128, 32), dtype=nl.float32).get_pattern()
        seen["split"] = nl.ndarray((128, 24), dtype=nl.float32).reshape_dim(1, (4, -1)).shape
        seen["flatten"] = nl.ndarray((128, 2, 3, 4), dtype=nl.float32).flatten_dims(1, 2).shape

    k(torch.zeros(4, 128, 32, device="neuron"))
    assert seen["int_partition"] == (1, 1)
    assert seen["free_int"] == (64, 64)
    assert seen["keep_2d"] == (64, 1)
    assert seen["ellipsis"] == (1, 64, 64)
    assert seen["step"] == (64, 64, 32)
    assert seen["strides"] == ((64, 4096), (4096, 1), 0, 4096)
    assert seen["permute"] == (64, 4)
    assert seen["hbm_int"] == (128, 32)
    assert seen["broadcast"] == (64, 0, 1)
    assert seen["view"] == (128, 256)
    assert seen["ap"] == (128, 512)
    assert seen["contig"] == (True, False)
    assert seen["pattern"] == [[32, 128], [1, 32]]
    assert seen["split"] == (128, 4, 6)
    assert seen["flatten"] == (128, 6, 4)


def test_view_rules_of_the_partition_dim():
    @nki.jit
    def k(a):
        t = nl.ndarray((128, 4, 8), dtype=nl.float32, buffer=nl.sbuf)
        t.permute((1, 0, 2))

    with pytest.raises(nki.NkiValidationError, match=r"moves the partition dim"):
        k(torch.zeros(1, 1, device="neuron"))

    @nki.jit
    def k2(a):
        nl.ndarray((128, 64), dtype=nl.float32).reshape((64, 128))

    with pytest.raises(nki.NkiValidationError, match=r"changes the partition dim"):
        k2(torch.zeros(1, 1, device="neuron"))


def test_strided_and_transposed_hbm_views_are_used_in_place():
    a = torch.randn(64, 96, device="neuron")

    @nki.jit
    def k(x):
        out = nl.ndarray((48, 64), dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray((48, 64), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[:, ::2].permute((1, 0)))
        nisa.dma_copy(dst=out, src=t)
        return out

    torch.testing.assert_close(k(a).cpu(), a.cpu()[:, ::2].t())
    # a transposed torch view as argument
    torch.testing.assert_close(k(a.t().t()).cpu(), a.cpu()[:, ::2].t())


def test_setitem_copies_into_views():
    a = torch.randn(8, 16)

    def body(x):
        out = nl.ndarray((8, 32), dtype=x.dtype, buffer=nl.sbuf)
        out[:, 0:16] = x
        out[:, 16:32] = 2.5
        return out

    check(body, a, expected=torch.cat([a, torch.full((8, 16), 2.5)], 1))


@pytest.mark.parametrize(
    "name,ref",
    [
        ("exp", torch.exp),
        ("log", lambda x: torch.log(x.abs() + 1)),
        ("sqrt", lambda x: torch.sqrt(x.abs())),
        ("tanh", torch.tanh),
        ("sigmoid", torch.sigmoid),
        ("relu", torch.relu),
        ("abs", torch.abs),
        ("square", torch.square),
        ("negative", torch.neg),
        ("sin", torch.sin),
        ("erf", torch.erf),
        ("floor", torch.floor),
    ],
)
def test_unary_functions(name, ref):
    a = torch.randn(16, 32)
    fn = getattr(nl, name)
    pre = {"log": lambda t: nl.add(nl.abs(t), 1.0), "sqrt": nl.abs}.get(name, lambda t: t)
    check(lambda x: fn(pre(x)), a, expected=ref(a), rtol=1e-5, atol=1e-5)


def test_binary_functions_operators_and_broadcasting():
    a, b, col = torch.randn(16, 32), torch.randn(16, 32), torch.rand(16, 1) + 0.5

    def body(x, y, c):
        r = (x + y) * 2.0 - nl.maximum(x, y) / c
        return nl.minimum(r, 1.5, dtype=nl.float32)

    check(body, a, b, col, expected=torch.clamp((a + b) * 2 - torch.maximum(a, b) / col, max=1.5))


@pytest.mark.parametrize(
    "name,ref",
    [
        ("sum", lambda t: t.sum(-1)),
        ("max", lambda t: t.amax(-1)),
        ("min", lambda t: t.amin(-1)),
        ("mean", lambda t: t.mean(-1)),
        ("var", lambda t: t.var(-1, unbiased=False)),
        ("prod", lambda t: t.prod(-1)),
    ],
)
def test_reductions(name, ref):
    a = torch.rand(16, 12) + 0.5
    check(
        lambda x: getattr(nl, name)(x, axis=1),
        a,
        expected=ref(a).unsqueeze(1),
        rtol=1e-5,
        atol=1e-5,
    )


def test_softmax_rms_norm_where_transpose_matmul():
    a, w = torch.randn(32, 64), torch.rand(32, 64) + 0.5

    def body(x, g):
        sm = nl.softmax(x, axis=1)
        rn = nl.rms_norm(x, g, axis=1, n=64)
        pos = nl.greater(x, 0.0)
        wh = nl.where(pos, x, 0.0)
        tr = nl.copy(nl.transpose(x[:, 0:32]))
        mm = nl.copy(nl.matmul(x[:, 0:32], x))  # (32 x 32) @ (32 x 64)
        out = nl.ndarray((32, 64 * 5), dtype=nl.float32, buffer=nl.sbuf)
        for i, t in enumerate((sm, rn, wh)):
            out[:, i * 64 : (i + 1) * 64] = t
        out[:, 192:224] = tr
        out[:, 256:320] = mm
        out[:, 224:256] = 0.0
        return out

    rn = a * torch.rsqrt(a.pow(2).mean(-1, keepdim=True) + 1e-6) * w
    expected = torch.cat(
        [
            torch.softmax(a, -1),
            rn,
            torch.relu(a),
            a[:, :32].t(),
            torch.zeros(32, 32),
            a[:, :32] @ a,
        ],
        1,
    )
    check(body, a, w, expected=expected, rtol=1e-4, atol=1e-4)


def test_creation_functions():
    def body(x):
        out = nl.ndarray((8, 40), dtype=nl.float32, buffer=nl.sbuf)
        out[:, 0:8] = nl.zeros((8, 8), dtype=nl.float32)
        out[:, 8:16] = nl.ones((8, 8), dtype=nl.bfloat16)
        out[:, 16:24] = nl.full((8, 8), 3.0, dtype=nl.float32)
        out[:, 24:32] = nl.shared_identity_matrix(8, dtype=nl.float32)
        out[:, 32:40] = nl.broadcast_to(x[0:1, :], (8, 8))
        return out

    a = torch.randn(8, 8)
    expected = torch.cat(
        [
            torch.zeros(8, 8),
            torch.ones(8, 8),
            torch.full((8, 8), 3.0),
            torch.eye(8),
            a[0:1].expand(8, 8),
        ],
        1,
    )
    check(body, a, expected=expected)


def test_legacy_load_store_with_index_expressions_and_masks():
    a = torch.randn(300, 40, device="neuron")

    @nki.jit
    def k(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        i_p, i_f = nl.mgrid[0:128, 0:40]
        for t in nl.affine_range(3):
            rows = t * 128 + i_p
            tile = nl.load(x[rows, i_f], mask=(rows < x.shape[0]))
            sq = nl.square(tile, mask=(rows < x.shape[0]))
            nl.store(out[rows, i_f], value=sq, mask=(rows < x.shape[0]) & (i_f < 20))
        return out

    out = k(a).cpu()
    torch.testing.assert_close(out[:, :20], a.cpu()[:, :20] ** 2)
    assert torch.isnan(out[:, 20:]).all()  # never written


def test_program_ids_num_programs_and_shared_output():
    @nki.jit
    def k(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        i, j = nl.program_id(0), nl.program_id(1)
        assert nl.num_programs(0) == 4 and nl.num_programs(1) == 2 and nl.num_programs() == 8
        assert nl.program_ndim() == 2
        t = nl.load(x[i, j])
        t2 = nl.add(t, float(10 * i + j))
        nl.store(out[i, j], value=t2)
        return out

    x = torch.randn(4, 2, 16, 8, device="neuron")
    out = k[4, 2](x)
    bump = (10 * torch.arange(4)[:, None] + torch.arange(2)[None, :]).float()[:, :, None, None]
    torch.testing.assert_close(out.cpu(), x.cpu() + bump)
    assert k.last_report.grid == (4, 2) and k.last_report.by_opcode["dma_copy"] == 16


def test_lnc_bracket_syntax_runs_two_programs():
    @nki.jit
    def k(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        half = x.shape[0] // nl.num_programs(0)
        p = nl.program_id(0)
        t = nl.load(x[p * half : (p + 1) * half, :])
        nl.store(out[p * half : (p + 1) * half, :], value=nl.multiply(t, 3.0))
        return out

    x = torch.randn(256, 32, device="neuron")
    torch.testing.assert_close(k[2](x).cpu(), x.cpu() * 3)


def test_device_print_prints_now(capsys):
    @nki.jit
    def k(x):
        t = nl.load(x)
        nl.device_print("tile:", t)

    k(torch.tensor([[1.0, 2.0]], device="neuron"))
    assert "tile: tensor([[1., 2.]])" in capsys.readouterr().out


def test_dtypes_are_torch_dtypes():
    assert nl.float32 is torch.float32 and nl.bfloat16 is torch.bfloat16 and nl.int8 is torch.int8
    assert nl.tile_size.pmax == 128 and nl.tile_size.gemm_moving_fmax == 512
    assert nl.tile_size.psum_bank_fmax == 512 and nl.tile_size.psum_num_banks == 8
    assert nl.tile_size.total_available_sbuf_size == 224 * 1024  # NeuronCore-v3
    with pytest.raises(nki.NkiValidationError, match=r"packed MX type nl.float8_e5m2_x4"):

        @nki.jit
        def k(x):
            t = nl.ndarray((4, 4), dtype=nl.float8_e5m2_x4)  # allocates (storage: int32 bits)
            nl.exp(t)  # an ALU instruction would read the bits as numbers

        k(torch.zeros(1, 1, device="neuron"))


def test_index_expressions_general_and_reversed():
    a = torch.randn(64, 16, device="neuron")

    @nki.jit
    def k(x):
        out = nl.ndarray((64, 16), dtype=x.dtype, buffer=nl.shared_hbm)
        ip = nl.arange(64)[:, None]
        jf = nl.arange(16)[None, :]
        rev = nl.load(x[63 - ip, jf])  # a reversed progression: still a strided view
        nl.store(out[ip, jf], value=rev)
        sq = nl.load(x[(ip * ip) % 64, jf])  # not a progression: gathered by position
        out2 = nl.ndarray((64, 16), dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out2[ip, jf], value=sq)
        shifted = nl.load(x[ip + 32, jf], mask=(ip + 32 < 64))  # half out of bounds, masked
        out3 = nl.ndarray((64, 16), dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out3[ip, jf], value=shifted, mask=(ip < 32))
        return out, out2, out3

    o1, o2, o3 = (t.cpu() for t in k(a))
    ac = a.cpu()
    torch.testing.assert_close(o1, ac.flip(0))
    torch.testing.assert_close(o2, ac[(torch.arange(64) ** 2) % 64])
    torch.testing.assert_close(o3[:32], ac[32:])
    assert torch.isnan(o3[32:]).all()
