"""NKI 2.33's instruction handles and the remaining reference names: every nki.isa (and
nki.collectives) call returns an nisa.NkiInstruction whose depends_on(...) holds it after its
producers on the modeled schedule; nl.bypass as an activation function and an ALU stage;
nl.NkiTensor and nisa.VirtualRegister are the types kernels see."""

import pytest
import torch

import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
from torch_neuronx import nki
from torch_neuronx.nki import NkiUnsupportedError


@nki.jit
def two_engines(t, dep):
    x = nl.ndarray(t.shape, t.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=x, src=t)
    a = nl.ndarray(t.shape, t.dtype, buffer=nl.sbuf)
    b = nl.ndarray(t.shape, t.dtype, buffer=nl.sbuf)
    c = nl.ndarray(t.shape, t.dtype, buffer=nl.sbuf)
    recip = nisa.reciprocal(dst=a, data=x)  # Vector Engine
    ex = nisa.activation(dst=b, data=x, op=nl.exp)  # Scalar Engine, independent of recip
    assert isinstance(recip, nisa.NkiInstruction) and isinstance(x, nl.NkiTensor)
    if dep == "edge":
        assert ex.depends_on(recip) is ex
    nisa.tensor_tensor(dst=c, data1=a, data2=b, op=nl.add)
    if dep == "late":
        ex.depends_on(recip)
    if dep == "backwards":
        recip.depends_on(ex)
    out = nl.ndarray(t.shape, t.dtype, buffer=nl.hbm)
    nisa.dma_copy(dst=out, src=c)
    return out


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_depends_on_holds_the_consumer_after_its_producer(dtype):
    x = (torch.rand(128, 512) + 0.5).to(dtype)
    free = two_engines(x.to("neuron"), None).cpu()
    t_free = two_engines.last_report.modeled_seconds
    held = two_engines(x.to("neuron"), "edge").cpu()
    assert torch.equal(held, free)
    assert two_engines.last_report.modeled_seconds > t_free
    ref = (1 / x.float()).to(dtype).float() + torch.exp(x.float()).to(dtype).float()
    torch.testing.assert_close(free.float(), ref.to(dtype).float(), rtol=2e-2, atol=2e-2)


def test_edges_the_in_order_simulator_cannot_honour():
    x = torch.rand(8, 8).to("neuron") + 0.5
    with pytest.raises(NkiUnsupportedError, match="right after the consumer"):
        two_engines(x, "late")
    with pytest.raises(NkiUnsupportedError, match="issued after the consumer"):
        two_engines(x, "backwards")


def test_bypass_and_registers():
    @nki.jit
    def k(x):
        t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        u = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.activation(dst=u, data=t, op=nl.bypass, scale=2.0)  # 2x, no function
        nisa.tensor_scalar(dst=u, data=u, op0=nl.add, operand0=1.0, op1=nl.bypass)
        r = nisa.register_alloc(3)
        assert isinstance(r, nisa.VirtualRegister)
        o = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=o, src=u)
        return o

    x = torch.randn(16, 8)
    assert torch.equal(k(x.to("neuron")).cpu(), 2 * x + 1)
