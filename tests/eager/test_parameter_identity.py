"""Module.to("neuron") keeps each Parameter object, as Module.to does on CUDA (issue 26).

Scripts that build the optimizer before moving the model (the pytorch/examples DDP tutorial)
must train; weight ties must hold; a parameter that cannot keep its identity says so.
"""

from __future__ import annotations

import weakref

import pytest
import torch
import torch.nn.functional as F


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))


def test_module_to_keeps_parameter_objects():
    m = _model()
    before = list(m.parameters())
    values = [p.detach().clone() for p in before]
    m.to("neuron")
    after = list(m.parameters())
    assert all(a is b for a, b in zip(before, after, strict=True))
    for p, v in zip(after, values, strict=True):
        assert p.device.type == "neuron" and isinstance(p, torch.nn.Parameter) and p.requires_grad
        assert torch.equal(p.cpu(), v)
    m.cpu()  # and back
    assert all(a is b for a, b in zip(before, m.parameters(), strict=True))
    assert all(p.device.type == "cpu" for p in m.parameters())


def test_optimizer_built_before_the_move_trains_the_model():
    """The DDP tutorial's order: optimizer first, then .to(device). Same losses as on CPU."""
    losses = {}
    for device in ("cpu", "neuron"):
        m = _model()
        opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        m.to(device)
        x = torch.randn(32, 8, generator=torch.Generator().manual_seed(1)).to(device)
        y = torch.randint(0, 4, (32,), generator=torch.Generator().manual_seed(2)).to(device)
        run = []
        for _ in range(4):
            opt.zero_grad()
            loss = F.cross_entropy(m(x), y)
            loss.backward()
            opt.step()
            run.append(loss.item())
        losses[device] = run
        assert run[-1] < run[0], f"{device}: did not train: {run}"
        # the optimizer's state lives next to the parameters
        for p in m.parameters():
            assert opt.state[p]["momentum_buffer"].device.type == device
    torch.testing.assert_close(losses["neuron"], losses["cpu"])


def test_gradients_move_with_their_parameters():
    m = _model()
    m(torch.randn(2, 8)).sum().backward()
    grads = [p.grad.clone() for p in m.parameters()]
    m.to("neuron")
    for p, g in zip(m.parameters(), grads, strict=True):
        assert p.grad.device.type == "neuron"
        assert torch.equal(p.grad.cpu(), g)


def test_tied_weights_stay_tied_and_keep_their_object():
    emb = torch.nn.Embedding(10, 4)
    head = torch.nn.Linear(4, 10, bias=False)
    head.weight = emb.weight
    m = torch.nn.ModuleDict({"emb": emb, "head": head})
    w = emb.weight
    m.to("neuron")
    assert m["emb"].weight is m["head"].weight is w
    assert w.device.type == "neuron"
    assert len(list(m.parameters())) == 1


def test_a_parameter_that_cannot_keep_its_identity_warns_and_still_moves():
    m = torch.nn.Linear(3, 2)
    ref = weakref.ref(m.weight)  # swap_tensors refuses tensors with weak references
    with pytest.warns(UserWarning, match="could not keep its identity.*Build the optimizer after"):
        m.to("neuron")
    assert m.weight.device.type == "neuron" and m.weight is not ref()
    assert m.bias.device.type == "neuron"


@pytest.mark.parametrize("rnn", [torch.nn.LSTM, torch.nn.GRU])
def test_recurrent_layers_inside_a_model_keep_their_parameters(rnn):
    """nn.RNNBase holds weak references to its weights (rebuilt by its own _apply inside the
    outer one); they used to block the swap, so an LSTM model moved after its optimizer was
    built trained nothing (with a warning). Now no warning, same objects, and the flat weights
    name them."""
    import warnings

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = rnn(8, 16, batch_first=True)
            self.head = torch.nn.Linear(16, 4)

        def forward(self, x):
            return self.head(self.rnn(x)[0])

    torch.manual_seed(0)
    model, ref = Model(), Model()
    ref.load_state_dict(model.state_dict())
    before = list(model.parameters())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)  # before the move, as tutorials do
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.to("neuron")
    assert all(a is b for a, b in zip(before, model.parameters(), strict=True))
    assert all(p.device.type == "neuron" for p in model.parameters())
    flat = zip(model.rnn._flat_weights, model.rnn._flat_weights_names, strict=True)
    assert all(w is getattr(model.rnn, n) for w, n in flat)
    x = torch.randn(2, 5, 8)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    for m, o, dev in ((model, opt, "neuron"), (ref, ref_opt, "cpu")):
        m(x.to(dev)).square().mean().backward()
        o.step()
    for a, b in zip(model.parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(a.cpu(), b)
