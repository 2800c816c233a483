"""``mask=`` on the reductions (nl.sum / nl.max / nl.min, nisa.tensor_reduce): masked-off
elements take no part, and a result none of whose inputs is active is left unwritten."""

import pytest
import torch
from nki_testing import on_dev, tile_kernel

import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl

DTYPES = [torch.float32, torch.bfloat16]
TOL = {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.bfloat16: dict(rtol=2e-2, atol=2e-2)}


def run(body, *inputs):
    return tile_kernel(body)(*on_dev(*inputs)).cpu()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "fn,ref",
    [
        (nl.sum, lambda v: v.sum(1)),
        (nl.max, lambda v: v.amax(1)),
        (nl.min, lambda v: v.amin(1)),
    ],
)
def test_nl_reduction_honours_a_free_axis_mask(dtype, fn, ref):
    x = torch.randn(16, 40).to(dtype)

    def body(t):
        i_f = nl.arange(40)[None, :]
        return fn(t, axis=1, keepdims=True, mask=(i_f < 25))

    out = run(body, x)
    torch.testing.assert_close(out[:, 0].float(), ref(x[:, :25].float()), **TOL[dtype])


def test_tensor_reduce_mask_on_partitions_leaves_inactive_rows_unwritten():
    x = torch.rand(16, 32)

    def body(t):
        out = nl.ndarray((16, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=out, value=-7.0)
        i_p = nl.arange(16)[:, None]
        nisa.tensor_reduce(dst=out, op=nl.add, data=t, axis=1, mask=(i_p < 10))
        return out

    out = run(body, x)
    torch.testing.assert_close(out[:10, 0], x[:10].sum(1), rtol=1e-5, atol=1e-5)
    assert out[10:].eq(-7.0).all()


@pytest.mark.parametrize("dtype", DTYPES)
def test_nl_mean_and_var_with_a_mask_are_those_of_the_active_elements(dtype):
    x = torch.randn(16, 40).to(dtype)

    def body(t):
        i_f = nl.arange(40)[None, :]
        out = nl.ndarray((16, 2), dtype=nl.float32, buffer=nl.sbuf)
        m = nl.mean(t, axis=1, keepdims=True, mask=(i_f < 25), dtype=nl.float32)
        v = nl.var(t, axis=1, mask=(i_f < 25), dtype=nl.float32)
        nisa.tensor_copy(dst=out[:, 0:1], src=m)
        nisa.tensor_copy(dst=out[:, 1:2], src=v)
        return out

    out = run(body, x)
    xa = x[:, :25].float()  # the masked sum divided by the active count, not by 40
    torch.testing.assert_close(out[:, 0], xa.mean(1), **TOL[dtype])
    torch.testing.assert_close(out[:, 1], xa.var(1, unbiased=False), **TOL[dtype])


def test_nl_mean_leaves_rows_without_active_inputs_unwritten_like_the_sum():
    x = torch.rand(16, 32)

    def body(t):
        out = nl.ndarray((16, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=out, value=-7.0)
        i_p = nl.arange(16)[:, None]
        m = nl.mean(t, axis=1, keepdims=True, mask=(i_p < 10))
        nisa.tensor_copy(dst=out, src=m, mask=(i_p < 10))
        s = nl.ndarray((16, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=s, value=-7.0)
        nisa.tensor_copy(dst=s, src=m)  # inactive rows of the mean: untouched, not rescaled
        both = nl.ndarray((16, 2), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=both[:, 0:1], src=out)
        nisa.tensor_copy(dst=both[:, 1:2], src=s)
        return both

    out = run(body, x)
    torch.testing.assert_close(out[:10, 0], x[:10].mean(1), rtol=1e-5, atol=1e-5)
    assert out[10:, 0].eq(-7.0).all()
    assert out[10:, 1].isnan().all()  # never written: uninitialised SBUF reads as NaN


def test_nl_mean_with_a_count_per_row():
    x = torch.randn(16, 32)

    def body(t):
        i_p = nl.arange(16)[:, None]
        i_f = nl.arange(32)[None, :]
        return nl.mean(t, axis=1, keepdims=True, mask=(i_f <= i_p))  # row p: p + 1 inputs

    out = run(body, x)
    ref = torch.stack([x[p, : p + 1].mean() for p in range(16)])
    torch.testing.assert_close(out[:, 0], ref, rtol=1e-5, atol=1e-5)
