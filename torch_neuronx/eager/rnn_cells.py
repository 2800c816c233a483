"""Fused LSTM/GRU cells for the neuron device.

PyTorch's RNN modules call the fused cell kernels `_thnn_fused_lstm_cell` /
`_thnn_fused_gru_cell` (and their backward ops) on every accelerator, including
PrivateUse1, but only CUDA ships them. On neuron they are written here with native element-wise
ops (the same formulas as PyTorch's CUDA kernels, including the saved workspace layout), so
nn.LSTM / nn.GRU / LSTMCell / GRUCell train on the device. Autograd uses PyTorch's own
derivative formulas, which call the backward ops below.
"""

from __future__ import annotations

import torch

from torch_neuronx.eager import python_kernels

_lib = torch.library.Library("aten", "IMPL")


def _lstm_cell(input_gates, hidden_gates, cx, input_bias=None, hidden_bias=None):
    gates = input_gates + hidden_gates
    if input_bias is not None:
        gates = gates + input_bias
    if hidden_bias is not None:
        gates = gates + hidden_bias
    i, f, g, o = gates.chunk(4, 1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    cy = f * cx + i * g
    hy = o * cy.tanh()
    workspace = torch.cat([i, f, g, o], 1)  # CUDA's layout: activated gates
    return hy, cy, workspace


def _lstm_cell_backward(grad_hy, grad_cy, cx, cy, workspace, has_bias):
    i, f, g, o = workspace.chunk(4, 1)
    tanh_cy = cy.tanh()
    gcx = torch.zeros_like(cy) if grad_cy is None else grad_cy.clone()
    go = torch.zeros_like(cy)
    if grad_hy is not None:
        gcx = gcx + grad_hy * o * (1 - tanh_cy * tanh_cy)
        go = grad_hy * tanh_cy * o * (1 - o)
    gi = gcx * g * i * (1 - i)
    gf = gcx * cx * f * (1 - f)
    gg = gcx * i * (1 - g * g)
    grad_gates = torch.cat([gi, gf, gg, go], 1)
    grad_cx = gcx * f
    grad_bias = grad_gates.sum(0) if has_bias else None
    return grad_gates, grad_cx, grad_bias


def _gru_cell(input_gates, hidden_gates, hx, input_bias=None, hidden_bias=None):
    if input_bias is not None:
        input_gates = input_gates + input_bias
    if hidden_bias is not None:
        hidden_gates = hidden_gates + hidden_bias
    ir, ii, in_ = input_gates.chunk(3, 1)
    hr, hi, hn = hidden_gates.chunk(3, 1)
    r = (ir + hr).sigmoid()
    z = (ii + hi).sigmoid()
    n = (in_ + r * hn).tanh()
    hy = n + z * (hx - n)
    workspace = torch.cat([r, z, n, hx, hn], 1)  # CUDA's layout
    return hy, workspace


def _gru_cell_backward(grad_hy, workspace, has_bias):
    r, z, n, hx, hn = workspace.chunk(5, 1)
    grad_hx = grad_hy * z
    gn = grad_hy * (1 - z) * (1 - n * n)
    gz = grad_hy * (hx - n) * z * (1 - z)
    gr = gn * hn * r * (1 - r)
    grad_input_gates = torch.cat([gr, gz, gn], 1)
    grad_hidden_gates = torch.cat([gr, gz, gn * r], 1)
    if has_bias:
        return (
            grad_input_gates,
            grad_hidden_gates,
            grad_hx,
            grad_input_gates.sum(0),
            grad_hidden_gates.sum(0),
        )
    return grad_input_gates, grad_hidden_gates, grad_hx, None, None


def install() -> None:
    python_kernels.register(_lib, "_thnn_fused_lstm_cell", _lstm_cell, "PrivateUse1")
    python_kernels.register(
        _lib, "_thnn_fused_lstm_cell_backward_impl", _lstm_cell_backward, "PrivateUse1"
    )
    python_kernels.register(_lib, "_thnn_fused_gru_cell", _gru_cell, "PrivateUse1")
    python_kernels.register(
        _lib, "_thnn_fused_gru_cell_backward", _gru_cell_backward, "PrivateUse1"
    )
