"""RNN / LSTM / GRU modules and cells on neuron vs CPU (forward and every gradient).

Unlike most eager ops these are not bit-identical to CPU, so the comparisons keep a
tolerance: on CPU the modules and cells run ATen's CPU RNN implementation, on neuron
PyTorch's accelerator path (the fused cells of torch_neuronx/eager/rnn_cells.py, with
CUDA's formulas), which rounds differently (up to ~1e-6 absolute measured)."""

import pytest
import torch


def _first(h):
    return h[0] if isinstance(h, tuple) else h


@pytest.mark.parametrize("cls", [torch.nn.LSTM, torch.nn.GRU, torch.nn.RNN])
@pytest.mark.parametrize("bias", [True, False])
def test_recurrent_modules_match_cpu(cls, bias):
    torch.manual_seed(0)
    ref = cls(3, 4, num_layers=2, bias=bias)
    dev = cls(3, 4, num_layers=2, bias=bias)
    dev.load_state_dict(ref.state_dict())
    dev = dev.to("neuron")
    x = torch.randn(5, 2, 3, requires_grad=True)
    xn = x.detach().to("neuron").requires_grad_()
    out, h = ref(x)
    (out.sum() + _first(h).sum()).backward()
    on, hn = dev(xn)
    (on.sum() + _first(hn).sum()).backward()
    assert on.device.type == "neuron"
    torch.testing.assert_close(on.cpu(), out, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(xn.grad.cpu(), x.grad, atol=1e-5, rtol=1e-5)
    for a, b in zip(dev.parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(a.grad.cpu(), b.grad, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("cls", [torch.nn.LSTMCell, torch.nn.GRUCell])
def test_cells_match_cpu(cls):
    torch.manual_seed(0)
    ref = cls(3, 4)
    dev = cls(3, 4)
    dev.load_state_dict(ref.state_dict())
    dev = dev.to("neuron")
    x = torch.randn(2, 3)
    torch.testing.assert_close(
        _first(dev(x.to("neuron"))).cpu(), _first(ref(x)), atol=1e-6, rtol=1e-5
    )


def test_lstm_stays_on_device():
    # Strict mode for this block only: any CPU fallback in LSTM forward/backward would raise.
    from torch_neuronx import _C

    prev = _C._strict()
    _C._set_strict(True)
    try:
        m = torch.nn.LSTM(3, 4).to("neuron")
        out, _ = m(torch.randn(5, 1, 3, device="neuron"))
        out.sum().backward()
    finally:
        _C._set_strict(prev)
    assert out.device.type == "neuron"
    assert all(p.grad.device.type == "neuron" for p in m.parameters())
