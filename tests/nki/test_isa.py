"""Each simulated ISA instruction against PyTorch on the same data."""

import pytest
import torch
from nki_testing import on_dev, tile_kernel

import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
from torch_neuronx import nki


def check(body, *inputs, expected, **tol):
    out = tile_kernel(body)(*on_dev(*inputs))
    assert out.device.type == "neuron"
    torch.testing.assert_close(
        out.cpu().float(), expected.float(), **(tol or dict(rtol=1e-5, atol=1e-5))
    )


def new(a, shape=None, dtype=None, buffer=nl.sbuf):
    return nl.ndarray(shape or a.shape, dtype=dtype or a.dtype, buffer=buffer)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_nc_matmul_is_stationary_transposed_times_moving(dtype):
    s, m = torch.randn(96, 64).to(dtype), torch.randn(96, 200).to(dtype)

    def body(st, mv):
        p = new(st, (64, 200), nl.float32, nl.psum)
        nisa.nc_matmul(dst=p, stationary=st, moving=mv)
        return p

    check(body, s, m, expected=s.float().t() @ m.float(), rtol=1e-4, atol=1e-4)


def test_nc_matmul_auto_accumulates_until_psum_is_read():
    s, m = torch.randn(64, 32), torch.randn(64, 100)

    def body(st, mv):
        p = new(st, (32, 100), nl.float32, nl.psum)
        nisa.nc_matmul(dst=p, stationary=st, moving=mv)  # overwrites
        nisa.nc_matmul(dst=p, stationary=st, moving=mv)  # accumulates
        first = new(st, (32, 100), nl.float32)
        nisa.tensor_copy(dst=first, src=p)  # evicting ends the accumulation group
        nisa.nc_matmul(dst=p, stationary=st, moving=mv)  # overwrites again
        out = new(st, (32, 100), nl.float32)
        nisa.tensor_tensor(dst=out, data1=first, data2=p, op=nl.add)
        return out

    check(body, s, m, expected=3 * (s.t() @ m), rtol=1e-4, atol=1e-4)


def test_nc_matmul_tfloat32_rounds_inputs():
    s = torch.tensor([[1.0 + 2**-20]]).repeat(1, 4)

    def body(st):
        t = new(st, dtype=nl.tfloat32)
        nisa.tensor_copy(dst=t, src=st)
        p = new(st, (4, 4), nl.float32, nl.psum)
        nisa.nc_matmul(dst=p, stationary=t, moving=t)
        return p

    check(body, s, expected=torch.ones(4, 4), rtol=0, atol=0)


def test_nc_transpose_tensor_and_vector_engine():
    x = torch.randn(100, 60)

    def te(a):
        p = new(a, (60, 100), buffer=nl.psum)
        nisa.nc_transpose(dst=p, data=a)
        return p

    check(te, x, expected=x.t())
    y = torch.randn(20, 30)

    def ve(a):
        out = new(a, (30, 20))
        nisa.nc_transpose(dst=out, data=a, engine=nisa.engine.vector)
        return out

    check(ve, y, expected=y.t())


@pytest.mark.parametrize(
    "op,ref",
    [
        (nl.add, torch.add),
        (nl.subtract, torch.sub),
        (nl.multiply, torch.mul),
        (nl.maximum, torch.maximum),
        (nl.divide, torch.div),
        (nl.power, torch.pow),
        (nl.greater, lambda a, b: (a > b).float()),
    ],
)
def test_tensor_tensor(op, ref):
    a, b = torch.rand(16, 24) + 0.5, torch.rand(16, 24) + 0.5

    def body(x, y):
        out = new(x)
        nisa.tensor_tensor(dst=out, data1=x, data2=y, op=op)
        return out

    check(body, a, b, expected=ref(a, b), rtol=1e-5, atol=1e-6)


def test_tensor_tensor_bitvec_on_integers():
    a, b = (
        torch.randint(0, 1 << 20, (8, 16), dtype=torch.int32),
        torch.randint(0, 1 << 20, (8, 16), dtype=torch.int32),
    )

    def body(x, y):
        out = new(x)
        nisa.tensor_tensor(dst=out, data1=x, data2=y, op=nl.bitwise_xor)
        return out

    out = tile_kernel(body)(*on_dev(a, b))
    assert torch.equal(out.cpu(), a ^ b)


def test_tensor_scalar_two_ops_reverse_and_vector_operand():
    a, col = torch.randn(16, 24), torch.randn(16, 1)

    def body(x, c):
        out = new(x)
        nisa.tensor_scalar(
            dst=out,
            data=x,
            op0=nl.subtract,
            operand0=c,
            reverse0=True,
            op1=nl.multiply,
            operand1=0.5,
        )
        return out

    check(body, a, col, expected=(col - a) * 0.5)


def test_tensor_scalar_unary_operator():
    a = torch.rand(8, 8) + 0.1

    def body(x):
        out = new(x)
        nisa.tensor_scalar(dst=out, data=x, op0=nl.rsqrt, operand0=None)
        return out

    check(body, a, expected=torch.rsqrt(a))


@pytest.mark.parametrize(
    "op,ref",
    [
        (nl.add, lambda t: t.sum(-1)),
        (nl.maximum, lambda t: t.amax(-1)),
        (nl.multiply, lambda t: t.prod(-1)),
    ],
)
def test_tensor_reduce(op, ref):
    a = torch.rand(16, 4, 6) + 0.5

    out = tile_kernel(lambda x: _reduce3(x, op))(*on_dev(a))
    torch.testing.assert_close(out.cpu(), ref(a), rtol=1e-5, atol=1e-5)


def _reduce3(x, op):
    out = new(x, (16, 4))
    nisa.tensor_reduce(dst=out, op=op, data=x, axis=2)
    return out


def test_tensor_reduce_all_free_dims_negated():
    a = torch.randn(16, 24)

    def body(x):
        out = new(x, (16, 1))
        nisa.tensor_reduce(dst=out, op=nl.maximum, data=x, axis=1, negate=True)
        return out

    check(body, a, expected=-a.amax(-1, keepdim=True))


@pytest.mark.parametrize(
    "fn,ref",
    [
        (nl.exp, torch.exp),
        (nl.tanh, torch.tanh),
        (nl.gelu, torch.nn.functional.gelu),
        (nl.silu, torch.nn.functional.silu),
        (nl.sigmoid, torch.sigmoid),
        (nl.gelu_apprx_tanh, lambda x: torch.nn.functional.gelu(x, approximate="tanh")),
    ],
)
def test_activation_with_scale_bias_and_fused_sum(fn, ref):
    a, bias = torch.randn(32, 40), torch.randn(32, 1)

    def body(x, b):
        out = new(x)
        s = new(x, (32, 1), nl.float32)
        nisa.activation(
            dst=out,
            op=fn,
            data=x,
            bias=b,
            scale=2.0,
            reduce_op=nl.add,
            reduce_res=s,
            reduce_cmd=nisa.reduce_cmd.reset_reduce,
        )
        both = new(x, (32, 41))
        nisa.tensor_copy(dst=both[:, 0:40], src=out)
        nisa.tensor_copy(dst=both[:, 40:41], src=s)
        return both

    y = ref(a * 2 + bias)
    check(body, a, bias, expected=torch.cat([y, y.sum(-1, keepdim=True)], 1), rtol=1e-5, atol=1e-5)


def test_activation_reduce_registers_accumulate_across_instructions():
    a = torch.randn(8, 16)

    def body(x):
        out = new(x)
        s = new(x, (8, 1), nl.float32)
        nisa.activation(
            dst=out, op=nl.copy, data=x, reduce_op=nl.add, reduce_cmd=nisa.reduce_cmd.reset_reduce
        )
        nisa.activation(
            dst=out,
            op=nl.square,
            data=x,
            reduce_op=nl.add,
            reduce_res=s,
            reduce_cmd=nisa.reduce_cmd.reduce,
        )
        return s

    check(body, a, expected=(a.sum(-1) + (a * a).sum(-1)).unsqueeze(1), rtol=1e-5, atol=1e-5)


def test_reciprocal_scalar_tensor_tensor_and_tensor_scalar_reduce():
    a, b = torch.rand(8, 16) + 0.5, torch.randn(8, 16)

    def body(x, y):
        r = new(x)
        nisa.reciprocal(dst=r, data=x)
        st = new(x)
        nisa.scalar_tensor_tensor(
            dst=st, data=r, op0=nl.multiply, operand0=3.0, op1=nl.add, operand1=y
        )
        red = new(x, (8, 1))
        out = new(x)
        nisa.tensor_scalar_reduce(
            dst=out, data=st, op0=nl.add, operand0=1.0, reduce_op=nl.max, reduce_res=red
        )
        both = new(x, (8, 17))
        nisa.tensor_copy(dst=both[:, 0:16], src=out)
        nisa.tensor_copy(dst=both[:, 16:17], src=red)
        return both

    y = 3.0 / a + b + 1.0
    check(body, a, b, expected=torch.cat([y, y.amax(-1, keepdim=True)], 1))


def test_iota_and_affine_select_causal_mask():
    x = torch.randn(8, 8)

    def body(t):
        io = new(t, (8, 8), nl.int32)
        nisa.iota(dst=io, pattern=[[1, 8]], offset=100, channel_multiplier=10)
        m = new(t)
        nisa.affine_select(
            dst=m,
            pattern=[[-1, 8]],
            channel_multiplier=1,
            on_true_tile=t,
            on_false_value=-9.0,
            cmp_op=nl.greater_equal,
        )
        both = new(t, (8, 16))
        nisa.tensor_copy(dst=both[:, 0:8], src=io)
        nisa.tensor_copy(dst=both[:, 8:16], src=m)
        return both

    iota = 100 + 10 * torch.arange(8)[:, None] + torch.arange(8)[None, :]
    causal = torch.where(torch.ones(8, 8, dtype=torch.bool).tril(), x, torch.tensor(-9.0))
    check(body, x, expected=torch.cat([iota.float(), causal], 1))


def test_memset_tensor_copy_cast_and_predicated_copy():
    a = torch.randn(8, 8)
    pred = (torch.rand(8, 8) > 0.5).to(torch.uint8)

    def body(x, p):
        out = new(x, dtype=nl.bfloat16)
        nisa.memset(dst=out, value=7.0)
        src = new(x, dtype=nl.bfloat16)
        nisa.tensor_copy(dst=src, src=x)
        nisa.tensor_copy_predicated(dst=out, src=src, predicate=p)
        return out

    expected = torch.where(
        pred.bool(), a.to(torch.bfloat16), torch.tensor(7.0, dtype=torch.bfloat16)
    )
    check(body, a, pred, expected=expected, rtol=0, atol=0)


def test_bn_stats_and_bn_aggr_give_mean_and_variance():
    a = torch.randn(16, 1000)

    def body(x):
        stats = new(x, (16, 12), nl.float32)
        nisa.bn_stats(dst=stats[:, 0:6], data=x[:, 0:500])
        nisa.bn_stats(dst=stats[:, 6:12], data=x[:, 500:1000])
        mv = new(x, (16, 2), nl.float32)
        nisa.bn_aggr(dst=mv, data=stats)
        return mv

    expected = torch.stack([a.mean(-1), a.var(-1, unbiased=False)], 1)
    check(body, a, expected=expected, rtol=1e-4, atol=1e-5)


def test_dma_copy_casts_and_dma_transpose():
    a = torch.randn(64, 32)

    @nki.jit
    def k(x):
        t = nl.ndarray((32, 64), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_transpose(dst=t, src=x)
        out = nl.ndarray((32, 64), dtype=nl.bfloat16, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)
        return out

    out = k(a.to("neuron"))
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.cpu(), a.t().to(torch.bfloat16))


def test_tensor_partition_reduce():
    a = torch.randn(16, 8)

    def body(x):
        out = new(x, (1, 8))
        nisa.tensor_partition_reduce(dst=out, op=nl.add, data=x)
        return out

    check(body, a, expected=a.sum(0, keepdim=True))


def test_fp8_dtypes_load_and_matmul():
    s = torch.randn(32, 16).to(torch.float8_e4m3fn)
    m = torch.randn(32, 24).to(torch.float8_e5m2)

    def body(st, mv):
        p = new(st, (16, 24), nl.float32, nl.psum)
        nisa.nc_matmul(dst=p, stationary=st, moving=mv)
        return p

    check(body, s, m, expected=s.float().t() @ m.float(), rtol=1e-5, atol=1e-5)
    assert nl.float8_e4m3fn is torch.float8_e4m3fn and nl.float8_e5m2 is torch.float8_e5m2
