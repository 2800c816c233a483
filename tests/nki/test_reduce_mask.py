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
