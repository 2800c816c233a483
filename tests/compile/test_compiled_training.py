"""GPT-style training through torch.compile(backend="neuron") matches eager."""

from __future__ import annotations

import pytest
import torch

from torch_neuronx.compile import get_dynamo_metrics
from torch_neuronx.testing.models import GPTConfig, build_tinygpt, make_batch

CFG = GPTConfig(vocab_size=32, seq_len=8, d_model=16, n_heads=2, n_layers=1)


def _grads(model):
    return {n: p.grad.detach().to("cpu").clone() for n, p in model.named_parameters()}


def test_gpt_forward_backward_matches_eager(device):
    eager = build_tinygpt(0, device, CFG)
    model = build_tinygpt(0, device, CFG)
    compiled = torch.compile(model, backend="neuron")
    idx, tgt = make_batch(1, batch_size=2, config=CFG, device=device)

    logits, loss = compiled(idx, tgt)
    loss.backward()
    ref_logits, ref_loss = eager(idx, tgt)
    ref_loss.backward()

    assert logits.device == idx.device and loss.device == idx.device
    torch.testing.assert_close(logits.cpu(), ref_logits.cpu(), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(loss.cpu(), ref_loss.cpu(), rtol=1e-5, atol=1e-6)
    got, ref = _grads(model), _grads(eager)
    assert got.keys() == ref.keys() and len(got) > 5
    for name in ref:
        torch.testing.assert_close(got[name], ref[name], rtol=1e-4, atol=1e-6, msg=name)

    records = get_dynamo_metrics()
    assert len(records) == 1
    rec = records[0]
    assert rec["fw_node_count"] > 0 and rec["bw_node_count"] > 0  # separate fw and bw graphs
    assert rec["cache"] in ("hit", "miss")


def test_mixed_mode_training_matches_eager(device):
    """Compiled forward+backward, eager optimizer step: three steps track eager training.
    (SGD, not Adam: the key bias gets a mathematically zero gradient, and Adam would turn
    its rounding noise into full-size, sign-random updates.)"""
    eager = build_tinygpt(0, device, CFG)
    model = build_tinygpt(0, device, CFG)
    compiled = torch.compile(model, backend="neuron")
    opt_e = torch.optim.SGD(eager.parameters(), lr=0.5, momentum=0.9)
    opt_c = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    losses_c, losses_e = [], []
    for step in range(3):
        idx, tgt = make_batch(step, batch_size=2, config=CFG, device=device)
        for m, opt, out in ((compiled, opt_c, losses_c), (eager, opt_e, losses_e)):
            opt.zero_grad(set_to_none=True)
            _, loss = m(idx, tgt)
            loss.backward()
            opt.step()
            out.append(float(loss.detach().cpu()))
    assert losses_c == pytest.approx(losses_e, rel=1e-4, abs=1e-5)
    assert losses_c[-1] < losses_c[0]
    for (n, p), q in zip(model.named_parameters(), eager.parameters(), strict=True):
        torch.testing.assert_close(p.detach().cpu(), q.detach().cpu(), rtol=1e-4, atol=1e-5, msg=n)
    assert len(get_dynamo_metrics()) == 1  # same shapes: no recompilation


def test_compile_single_submodule(device):
    eager = build_tinygpt(0, device, CFG)
    model = build_tinygpt(0, device, CFG)
    block = model.blocks[0]
    block.forward = torch.compile(block.forward, backend="neuron")
    idx, tgt = make_batch(3, batch_size=2, config=CFG, device=device)
    _, loss = model(idx, tgt)
    loss.backward()
    _, ref = eager(idx, tgt)
    ref.backward()
    torch.testing.assert_close(loss.cpu(), ref.cpu(), rtol=1e-5, atol=1e-6)
    for (n, p), q in zip(model.named_parameters(), eager.parameters(), strict=True):
        torch.testing.assert_close(p.grad.cpu(), q.grad.cpu(), rtol=1e-4, atol=1e-6, msg=n)
    records = get_dynamo_metrics()
    assert len(records) == 1 and records[0]["bw_node_count"] > 0
