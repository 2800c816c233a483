"""Index arithmetic a model does on CPU on purpose stays on CPU under torch.compile(backend=
"neuron") (compile/host_graphs.py and backend._InputPlacement), as it does eagerly.

Found on Hugging Face's Inkling2 vision tower in the model-zoo sweep: it moves its image grid
to the CPU and derives patch positions with repeat_interleave (a graph break at each call);
the backend copied those CPU-only graphs' inputs to neuron, their outputs came back on neuron,
and the model's next line mixed them with a CPU arange: "Tensor device mismatch"."""

import torch
import torch.nn.functional as F


class _GridPositions(torch.nn.Module):
    """transformers' get_vision_interpolation_indices_and_weights, reduced: CPU index
    arithmetic between neuron layers."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x, grid):
        grid = grid.cpu() * torch.tensor([1, 2, 2])  # on the host, as the model writes it
        device = grid.device
        counts = grid[:, 0] * grid[:, 1] * grid[:, 2]
        heights = torch.repeat_interleave(grid[:, 1], counts)
        widths = torch.repeat_interleave(grid[:, 2], counts)
        starts = torch.repeat_interleave(F.pad(counts.cumsum(0)[:-1], (1, 0)), counts)
        within = (torch.arange(counts.sum(), device=device) - starts) % (heights * widths)
        return self.lin(x) * within.to(x.device).float().mean(), within


def test_cpu_index_arithmetic_inside_a_neuron_model_stays_on_cpu():
    torch.manual_seed(0)
    torch._dynamo.reset()
    model = _GridPositions().to("neuron")
    x = torch.randn(3, 4, device="neuron")
    grid = torch.tensor([[1, 1, 2], [1, 2, 1]], device="neuron")
    out, within = torch.compile(model, backend="neuron")(x, grid)
    ref_out, ref_within = model(x, grid)
    assert within.device.type == "cpu" and torch.equal(within, ref_within)
    assert out.device.type == "neuron"
    torch.testing.assert_close(out.cpu(), ref_out.cpu())


def test_a_module_left_on_cpu_still_runs_on_neuron():
    # TorchNeuron's autocopy: a compiled module whose parameters are on CPU runs on the device
    torch._dynamo.reset()
    model = torch.nn.Linear(4, 3)
    x = torch.randn(2, 4)
    out = torch.compile(model, backend="neuron")(x)
    assert out.device.type == "neuron"
    torch.testing.assert_close(out.cpu(), model(x))
