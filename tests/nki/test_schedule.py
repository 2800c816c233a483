"""kernel.with_schedule (NKI 2.33's scheduling edges between named instructions): the values
are unchanged, an edge between otherwise independent instructions on two engines delays the
later one on the modeled schedule, and names that do not exist are errors."""

import pytest
import torch

import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
from torch_neuronx import nki
from torch_neuronx.nki import NkiUnsupportedError, NkiValidationError


@nki.jit()
def kernel(t):
    """AWS's guide example: "recip" (Vector Engine) and "plus1" could run in any order."""
    x = nl.ndarray(t.shape, t.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=x, src=t)
    a = nl.ndarray(t.shape, t.dtype, buffer=nl.sbuf)
    b = nl.ndarray(t.shape, t.dtype, buffer=nl.sbuf)
    c = nl.ndarray(t.shape, t.dtype, buffer=nl.sbuf)
    nisa.reciprocal(dst=a, data=x, name="recip")
    nisa.activation(dst=b, data=x, op=nl.exp, name="plus1")  # Scalar Engine
    nisa.tensor_tensor(dst=c, data1=a, data2=b, op=nl.add)
    out = nl.ndarray(t.shape, t.dtype, buffer=nl.hbm)
    nisa.dma_copy(dst=out, src=c)
    return out


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_an_edge_serialises_two_engines_on_the_modeled_schedule(dtype):
    x = (torch.rand(128, 512) + 0.5).to(dtype)
    free = kernel(x.to("neuron")).cpu()
    t_free = kernel.last_report.modeled_seconds
    for edges in ([("plus1", "recip")], [("plus1", ["recip"])]):
        scheduled = kernel.with_schedule(edges)
        assert torch.equal(scheduled(x.to("neuron")).cpu(), free)
        # exp waits for the reciprocal instead of running beside it
        assert scheduled.last_report.modeled_seconds > t_free
    ref = (1 / x.float()).to(dtype).float() + torch.exp(x.float()).to(dtype).float()
    torch.testing.assert_close(free.float(), ref.to(dtype).float(), rtol=2e-2, atol=2e-2)


def test_bad_schedules():
    x = torch.rand(8, 8).to("neuron") + 0.5
    with pytest.raises(NkiValidationError, match=r"names \['nothere'\], but no instruction"):
        kernel.with_schedule([("nothere", "recip")])(x)
    with pytest.raises(NkiUnsupportedError, match="'recip' depends on \\['plus1'\\]"):
        kernel.with_schedule([("recip", "plus1")])(x)
    with pytest.raises(NkiValidationError, match="pair"):
        kernel.with_schedule(["plus1"])
