"""RMSNorm through nki_op (NKI forward and backward kernels) inside a small model trained for
a few steps: the losses equal the same model with a PyTorch RMSNorm."""

import pytest
import rmsnorm
import torch


class Net(torch.nn.Module):
    def __init__(self, norm_cls, dtype):
        super().__init__()
        self.inp = torch.nn.Linear(32, 128, dtype=dtype)
        self.norm = norm_cls(128, dtype=dtype)
        self.out = torch.nn.Linear(128, 10, dtype=dtype)

    def forward(self, x):
        return self.out(torch.relu(self.norm(self.inp(x))))


class TorchRMSNorm(torch.nn.Module):
    def __init__(self, dim, dtype):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(dim, dtype=dtype))

    def forward(self, x):
        return rmsnorm.reference(x, self.weight)


def train(model, steps, dtype):
    torch.manual_seed(1)
    x = torch.randn(200, 32).to(dtype).to("neuron")
    y = torch.randint(0, 10, (200,)).to("neuron")
    opt = torch.optim.SGD(model.parameters(), lr=0.2)
    losses = []
    for _ in range(steps):  # one batch: the loss must go down
        loss = torch.nn.functional.cross_entropy(model(x).float(), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.bfloat16, 2e-2)])
def test_training_losses_match_pytorch_rmsnorm(dtype, tol):
    torch.manual_seed(0)
    ref = Net(TorchRMSNorm, dtype)
    nki_model = Net(lambda d, dtype: rmsnorm.NkiRMSNorm(d, dtype=dtype), dtype)
    nki_model.load_state_dict(ref.state_dict())
    ref_losses = train(ref.to("neuron"), 4, dtype)
    nki_losses = train(nki_model.to("neuron"), 4, dtype)
    assert nki_losses[-1] < nki_losses[0]  # it learns
    torch.testing.assert_close(
        torch.tensor(nki_losses), torch.tensor(ref_losses), rtol=tol, atol=tol
    )
    # the norm's weight received gradients from the NKI backward kernel
    torch.testing.assert_close(
        nki_model.norm.weight.detach().cpu().float(),
        ref.norm.weight.detach().cpu().float(),
        rtol=tol * 10,
        atol=tol * 10,
    )


def test_compiled_training_with_the_nki_op_matches_eager():
    torch.manual_seed(0)
    eager = Net(lambda d, dtype: rmsnorm.NkiRMSNorm(d, dtype=dtype), torch.float32)
    compiled = Net(lambda d, dtype: rmsnorm.NkiRMSNorm(d, dtype=dtype), torch.float32)
    compiled.load_state_dict(eager.state_dict())
    eager_losses = train(eager.to("neuron"), 3, torch.float32)
    compiled_losses = train(
        torch.compile(compiled.to("neuron"), backend="neuron"), 3, torch.float32
    )
    torch.testing.assert_close(
        torch.tensor(compiled_losses), torch.tensor(eager_losses), rtol=1e-5, atol=1e-5
    )
