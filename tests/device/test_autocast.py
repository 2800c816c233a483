"""torch.autocast("neuron") and GradScaler (issue 2, point 7)."""

import pytest
import torch
import torch.nn.functional as F


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_autocast_follows_cuda_lists(dtype):
    a = torch.randn(8, 8, device="neuron")
    b = torch.randn(8, 8, device="neuron")
    with torch.autocast("neuron", dtype=dtype):
        assert (a @ b).dtype == dtype  # lower precision list
        assert F.linear(a, b).dtype == dtype
        assert torch.softmax(a, -1).dtype == torch.float32  # fp32 list
        assert F.layer_norm(a, (8,)).dtype == torch.float32
        assert torch.addmm(a, a, b).dtype == dtype
        assert (a.to(dtype) + b).dtype == torch.float32  # promotion outside the lists
    assert (a @ b).dtype == torch.float32


def test_autocast_matches_cpu_reference():
    a = torch.randn(16, 16)
    b = torch.randn(16, 16)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ref = a @ b
    with torch.autocast("neuron", dtype=torch.bfloat16):
        got = a.to("neuron") @ b.to("neuron")
    assert torch.equal(got.cpu(), ref)


def test_bce_is_banned_like_cuda():
    x = torch.rand(4, device="neuron")
    with torch.autocast("neuron", dtype=torch.bfloat16):
        with pytest.raises(RuntimeError, match="binary_cross_entropy_with_logits"):
            F.binary_cross_entropy(x, x)


def test_grad_scaler_trains_and_skips_inf():
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1).to("neuron")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("neuron", init_scale=2.0**8)
    x = torch.randn(8, 4, device="neuron")
    w0 = model.weight.detach().cpu().clone()
    with torch.autocast("neuron", dtype=torch.bfloat16):
        loss = model(x).float().pow(2).mean()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    assert not torch.equal(model.weight.detach().cpu(), w0)
    # An inf gradient makes the scaler skip the step and halve the scale.
    w1 = model.weight.detach().cpu().clone()
    opt.zero_grad()
    (model(x).sum() * float("inf")).backward()
    scale = scaler.get_scale()
    scaler.step(opt)
    scaler.update()
    assert torch.equal(model.weight.detach().cpu(), w1)
    assert scaler.get_scale() == scale * 0.5
