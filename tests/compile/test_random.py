"""Random ops in compiled graphs draw from the neuron device's generator (issue 26).

Inductor creates the seeds of its random ops with ``aten.randint`` on the host, which would
draw from PyTorch's default CPU generator; the backend turns that seed creation into a graph
input drawn on the neuron device at each call (backend._seeds_as_inputs).
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F


def _mask_fn(x):
    return F.dropout(x, 0.5, training=True)


def _rand_fn(x):
    return x + torch.rand(x.shape, device=x.device) + torch.randn_like(x)


@pytest.mark.parametrize("grad", [True, False], ids=["training", "inference"])
@pytest.mark.parametrize("fn", [_mask_fn, _rand_fn], ids=["dropout", "rand_randn"])
def test_neuron_manual_seed_makes_compiled_random_ops_reproducible(device, grad, fn):
    x = torch.ones(16, 32, device=device, requires_grad=grad)
    compiled = torch.compile(fn, backend="neuron")
    with torch.set_grad_enabled(grad):
        torch.neuron.manual_seed(1234)
        first = compiled(x).detach().cpu()
        second = compiled(x).detach().cpu()
        torch.neuron.manual_seed(1234)
        # re-seeding the CPU generator alone must not change the compiled draws
        torch.default_generator.manual_seed(99)
        again = compiled(x).detach().cpu()
        torch.neuron.manual_seed(1234)
        torch.default_generator.manual_seed(7)
        again2 = compiled(x).detach().cpu()
    assert torch.equal(first, again)
    assert torch.equal(first, again2)
    assert not torch.equal(first, second)  # the stream advances between calls


def test_compiled_dropout_does_not_draw_from_the_cpu_generator(device):
    x = torch.ones(8, 8, device=device, requires_grad=True)
    compiled = torch.compile(_mask_fn, backend="neuron")
    compiled(x)  # compile outside the measured call
    cpu_state = torch.get_rng_state()
    compiled(x).sum().backward()
    assert torch.equal(torch.get_rng_state(), cpu_state)


def test_eager_and_compiled_both_advance_the_neuron_generator(device):
    x = torch.ones(8, 8, device=device)
    compiled = torch.compile(_mask_fn, backend="neuron")
    for run in (_mask_fn, compiled):
        run(x)  # compile once
        before = torch.neuron.get_rng_state().clone()
        run(x)
        assert not torch.equal(torch.neuron.get_rng_state(), before), run


def test_compiled_dropout_masks_agree_between_forward_and_backward(device):
    """The seed input is drawn once per forward; the backward reuses the saved mask."""
    x = torch.randn(32, 32, device=device, requires_grad=True)
    compiled = torch.compile(_mask_fn, backend="neuron")
    torch.neuron.manual_seed(3)
    y = compiled(x)
    y.sum().backward()
    kept = y.detach().cpu() != 0
    assert torch.equal(x.grad.cpu() != 0, kept)
    assert 0.3 < kept.float().mean().item() < 0.7
