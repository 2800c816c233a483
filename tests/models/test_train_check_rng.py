"""A model that draws random numbers in its forward (ViTMAE's masking, PhiMoE's router
sampling) is compared on equal draws: both sides' steps start from the same seed."""

import torch

from torch_neuronx.testing.model_zoo import train_check


class _Masking(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        noise = torch.rand(x.shape, device=x.device)  # as ViTMAE's random_masking draws
        return self.lin(x * (noise > 0.5))


def _build():
    torch.manual_seed(0)
    return _Masking(), {"x": torch.randn(4, 8)}


def test_random_draws_in_the_forward_match_cpu():
    (outcome,) = train_check.check("test:masking", _build, modes=("eager",))
    assert outcome.status == "pass", outcome.detail
    assert outcome.loss_rel <= 1e-6
