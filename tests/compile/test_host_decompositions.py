"""backend="neuron" decomposes a graph as CPU Inductor does (compile/host_decompositions.py).

The emulated core's compiler is Inductor's CPU code generator, and the model zoo judges a
compiled run against CPU Inductor; a decomposition that tests the device type gave neuron
another graph (timm's efficientformerv2_s0: its 1x1 attention's bmm). Differential: the
same function compiled by Inductor on CPU and by the neuron backend gives the same bits.
"""

from __future__ import annotations

import inspect
import re

import pytest
import torch
import torch.nn.functional as F

from torch_neuronx.compile import host_decompositions
from torch_neuronx.testing.layouts import apply_layout, to_device_keeping_layout


def _matmuls(q, k, a, b, bias, w_small, g, gw, gb):
    dots = torch.bmm(q, k)  # [B, 1, K] x [B, K, 1]: a multiply and a sum on CPU
    dot = torch.mm(a, b)  # [1, K] x [K, 1]
    lin = torch.addmm(bias, a[:, :16], w_small)  # [1, 16] x [16, 16]
    gn = F.group_norm(g, 4, gw, gb)
    return dots, dot, lin, gn


def _inputs(layout: str):
    gen = torch.Generator().manual_seed(0)

    def r(*shape):
        return torch.randn(*shape, generator=gen)

    g = apply_layout(r(2, 8, 5, 5), layout)
    return [r(6, 1, 200), r(6, 200, 1), r(1, 200), r(200, 1), r(1, 16), r(16, 16), g, r(8), r(8)]


@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_compiled_matches_cpu_inductor_bit_for_bit(layout, device):
    cpu_in = _inputs(layout)
    expected = torch.compile(_matmuls)(*cpu_in)  # CPU Inductor
    torch._dynamo.reset()
    dev_in = [to_device_keeping_layout(t, device) for t in cpu_in]
    actual = torch.compile(_matmuls, backend="neuron")(*dev_in)
    differ = {
        name: (a.cpu() - e).abs().max().item()
        for name, e, a in zip(("bmm", "mm", "addmm", "group_norm"), expected, actual, strict=True)
        if not torch.equal(a.cpu(), e)
    }
    assert not differ, differ


_DEVICE_TEST = re.compile(
    r"device\.type\s*(==|!=|in\b|not in\b)|[!=]= torch\.device\(|\.is_cuda|\.is_cpu|is_gpu\("
)


def test_every_device_type_branch_is_handled_or_reviewed():
    """A PyTorch upgrade that adds a device-type test to a decomposition of Inductor's table
    fails here until host_decompositions lists its host branch or reviews it."""
    from torch._inductor.decomposition import select_decomp_table

    # an op's other overloads (`out=` forms: a functionalized graph has none) go with it
    handled = {op.overloadpacket for op in host_decompositions.HOST_BRANCH}
    table = select_decomp_table()
    unreviewed = set()
    for op, fn in table.items():
        if getattr(op, "overloadpacket", None) in handled:
            continue
        f = inspect.unwrap(fn)
        try:
            src = inspect.getsource(f)
        except (OSError, TypeError):
            continue
        name = f"{f.__module__}.{f.__qualname__}"
        if (
            _DEVICE_TEST.search(src)
            and f not in handled
            and name not in host_decompositions.REVIEWED
        ):
            unreviewed.add(name)
    assert not unreviewed, sorted(unreviewed)
    # every replaced op is one the table decomposes (a renamed overload would go unnoticed)
    assert all(op in table for op in host_decompositions.HOST_BRANCH)


@pytest.mark.parametrize(
    "fn,shapes,kept",
    [
        (torch.bmm, [(6, 1, 8), (6, 8, 1)], None),  # a batch of dot products: mul + sum
        (torch.mm, [(1, 8), (8, 1)], None),
        (torch.mm, [(4, 1), (1, 4)], None),  # a small outer product: mul
        (torch.mm, [(40, 1), (1, 40)], "aten.mm.default"),  # a large one stays a matmul
    ],
    ids=["bmm-dot", "mm-dot", "mm-small-outer", "mm-large-outer"],
)
def test_neuron_tensors_decompose_as_cpu_tensors(fn, shapes, kept, device):
    """The table traced on neuron tensors gives CPU's graph (traced on the device itself, as
    AOTAutograd traces the neuron backend's graphs)."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from torch_neuronx.compile.decompositions import neuron_decompositions

    def ops(dev):
        args = [torch.randn(s, device=dev) for s in shapes]
        gm = make_fx(fn, decomposition_table=neuron_decompositions())(*args)
        return [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]

    assert ops(device.type) == ops("cpu")
    assert (kept in ops(device.type)) if kept else "aten.mm.default" not in ops(device.type)


@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_compiled_group_norm_training_step_matches_cpu_inductor(layout, device):
    """GroupNorm's backward under backend="neuron" (AOTAutograd traces below the eager
    AutogradPrivateUse1 kernel of eager/group_norm_autograd.py): CPU Inductor's bits and
    strides, for the output and every gradient."""
    gen = torch.Generator().manual_seed(0)
    x = apply_layout(torch.randn(2, 8, 5, 5, generator=gen), layout)
    w, b = torch.randn(8, generator=gen), torch.randn(8, generator=gen)

    def step(dev, compiler):
        # (detached copies: `.to("cpu")` of a CPU tensor is the tensor itself)
        xx = to_device_keeping_layout(x.detach().clone(memory_format=torch.preserve_format), dev)
        xx.requires_grad_()
        ww, bb = w.clone().to(dev).requires_grad_(), b.clone().to(dev).requires_grad_()
        f = compiler(lambda a, c, d: F.group_norm(a, 4, c, d).square().sum())
        f(xx, ww, bb).backward()
        return xx.grad, ww.grad, bb.grad

    expected = step("cpu", torch.compile)
    torch._dynamo.reset()
    actual = step(device, lambda f: torch.compile(f, backend="neuron"))
    for e, a in zip(expected, actual, strict=True):
        assert a.stride() == e.stride()
        assert torch.equal(a.cpu(), e)
