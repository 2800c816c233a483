"""nki_op: NKI kernels as PyTorch custom ops on neuron tensors (eager, torch.compile,
autocast, autograd), and its errors."""

import pytest
import rmsnorm
import tensor_add
import torch

import torch_neuronx
import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
from torch_neuronx import nki


@nki.jit
def scale_kernel(x, factor):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=factor)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def scale_in_place_kernel(x, factor):
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=factor)
    nisa.dma_copy(dst=x, src=t)


@nki.nki_op("nki_tests::scale", mutates_args={})
def scale(x: torch.Tensor, factor: float) -> torch.Tensor:
    return scale_kernel(x, factor)


@nki.nki_op("nki_tests::scale_", mutates_args={"x"})
def scale_(x: torch.Tensor, factor: float) -> None:
    scale_in_place_kernel(x, factor)


@nki.nki_op("nki_tests::scale_undeclared", mutates_args={})
def scale_undeclared(x: torch.Tensor, factor: float) -> None:
    scale_in_place_kernel(x, factor)


@nki.nki_op("nki_tests::scale_into", mutates_args={})
def scale_into(x: torch.Tensor, factor: float) -> torch.Tensor:
    out = torch.empty_like(x)  # the TorchNeuron pattern: the kernel writes a new tensor
    scale_into_kernel(x, out, factor)
    return out


@nki.jit
def scale_into_kernel(x, out, factor):
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=factor)
    nisa.dma_copy(dst=out, src=t)


def test_eager_on_neuron_counts_as_native_op():
    torch_neuronx.clear_op_tracking()
    x = torch.randn(64, 96, device="neuron")
    y = scale(x, 3.0)
    assert y.device.type == "neuron"
    torch.testing.assert_close(y.cpu(), x.cpu() * 3)
    assert "nki_tests::scale" in torch_neuronx.get_executed_ops()
    assert "nki_tests::scale" not in torch_neuronx.get_fallback_ops()


def test_kernel_writes_a_tensor_created_by_the_op():
    x = torch.randn(32, 64, device="neuron")
    torch.testing.assert_close(scale_into(x, 0.5).cpu(), x.cpu() * 0.5)


def test_declared_mutation_updates_the_input_in_place():
    x = torch.randn(32, 64, device="neuron")
    before = x.cpu()
    ptr = x.data_ptr()
    scale_(x, 2.0)
    assert x.data_ptr() == ptr
    torch.testing.assert_close(x.cpu(), before * 2)


def test_writing_an_input_not_declared_mutable_is_an_error():
    x = torch.randn(32, 64, device="neuron")
    before = x.cpu()
    with pytest.raises(
        nki.NkiMutationError,
        match=r"input 'x' of nki_op 'nki_tests::scale_undeclared'.*mutates_args",
    ) as e:
        scale_undeclared(x, 2.0)
    assert "dma_copy(dst=x, src=t)" in str(e.value)  # the kernel line
    torch.testing.assert_close(x.cpu(), before)  # nothing was written


def test_cpu_tensors_are_a_clear_error():
    with pytest.raises(
        nki.NkiValidationError, match=r"nki_op 'nki_tests::scale'.*CPU tensors.*to\('neuron'\)"
    ):
        scale(torch.randn(4, 4), 2.0)
    with pytest.raises(nki.NkiValidationError, match=r"argument 'x' is a CPU tensor"):
        scale_kernel(torch.randn(4, 4), 2.0)


@pytest.mark.parametrize("dtype", [torch.float64, torch.int64, torch.complex64])
def test_unsupported_dtype_is_a_clear_error(dtype):
    x = torch.ones(4, 4, dtype=dtype, device="neuron")
    with pytest.raises(nki.NkiValidationError, match=rf"argument 'x' is {dtype}"):
        scale(x, 2.0)


def test_direct_kernel_call_on_neuron_tensors_uses_device_memory():
    x = torch.randn(16, 32, device="neuron")
    y = scale_kernel(x, 2.0)
    assert y.device == x.device
    torch.testing.assert_close(y.cpu(), x.cpu() * 2)


def test_under_autocast():
    lin = torch.nn.Linear(64, 64).to("neuron")
    x = torch.randn(8, 64, device="neuron")
    w = torch.ones(64, device="neuron")
    with torch.autocast("neuron", dtype=torch.bfloat16):
        h = lin(x)
        assert h.dtype == torch.bfloat16
        y = rmsnorm.rms_norm(h, w.to(torch.bfloat16))
    assert y.dtype == torch.bfloat16
    torch.testing.assert_close(
        y.cpu().float(), rmsnorm.reference(h, w).cpu().float(), rtol=2e-2, atol=2e-2
    )


def test_fake_implementation_checks_rules_and_gives_shapes():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        a = torch.empty(300, 1100, device="neuron")
        out = tensor_add.tensor_add(a, a)
        assert out.shape == (300, 1100) and out.device.type == "neuron"
        y, rstd = rmsnorm.rmsnorm_fwd(
            torch.empty(10, 64, device="neuron"), torch.empty(64, device="neuron"), 1e-6
        )
        assert y.shape == (10, 64) and rstd.shape == (10, 1) and rstd.dtype == torch.float32


def test_compiled_graph_keeps_the_op_as_one_node():
    graphs = []

    def counting_backend(gm, example_inputs):
        graphs.append(gm)
        return torch._dynamo.lookup_backend("neuron")(gm, example_inputs)

    torch._dynamo.reset()

    @torch.compile(backend=counting_backend, fullgraph=True)
    def f(a, b):
        return torch.relu(tensor_add.tensor_add(a * 2, b)) + 1

    a = torch.randn(130, 600, device="neuron")
    b = torch.randn(130, 600, device="neuron")
    out = f(a, b)
    torch.testing.assert_close(out.cpu(), torch.relu(a.cpu() * 2 + b.cpu()) + 1)
    assert len(graphs) == 1
    calls = [
        n
        for n in graphs[0].graph.nodes
        if n.op == "call_function" and "nki_examples" in str(n.target)
    ]
    assert len(calls) == 1
    # the compiled graph ran the simulator: the kernel reported its launch
    assert tensor_add.nki_tensor_add_kernel.last_report.by_opcode["tensor_tensor"] == 4


@nki.nki_op("nki_tests::scale_diff", mutates_args={})
def scale_diff(x: torch.Tensor, factor: float) -> torch.Tensor:
    return scale_kernel(x, factor)


def _scale_setup(ctx, inputs, output):
    ctx.factor = inputs[1]


def _scale_backward(ctx, grad):
    return grad * ctx.factor, None  # a PyTorch formula as the backward


scale_diff.register_autograd(_scale_backward, setup_context=_scale_setup)


def test_autograd_with_a_pytorch_formula_backward():
    x = torch.randn(16, 8, device="neuron", requires_grad=True)
    y = scale_diff(x, 1.5)
    (gx,) = torch.autograd.grad((y * y).sum(), x)
    torch.testing.assert_close(gx.cpu(), (2 * 1.5 * 1.5 * x).detach().cpu())
