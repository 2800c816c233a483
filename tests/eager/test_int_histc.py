"""Integer torch.histc on neuron, as CUDA has it (torch_neuronx/eager/int_histc.py).

CPU's kernel takes floating inputs only; transformers' MoE layers call histc on int32 expert
ids on every device but CPU. The reference is CPU's histc of the same values in float64 (exact
for these small integers), cast to the input's dtype, which is CUDA's result dtype.
"""

from __future__ import annotations

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from torch_neuronx.testing.model_zoo import train_check

INT_DTYPES = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)


def _reference(x: torch.Tensor, bins: int, lo, hi) -> torch.Tensor:
    lo, hi = int(lo), int(hi)
    if lo == hi and x.numel():
        lo, hi = int(x.min()), int(x.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    return torch.histc(x.double(), bins, lo, hi).to(x.dtype)


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize(
    ("bins", "lo", "hi"),
    [(4, 0, 3), (5, 0, 0), (7, 1, 9), (3, 2.7, 8.9), (1, 0, 100), (6, 50, 60)],
)
def test_int_histc_matches_a_float_reference(dtype, bins, lo, hi):
    g = torch.Generator().manual_seed(bins)
    x = torch.randint(0, 12, (5, 9), generator=g).to(dtype)
    got = torch.histc(x.to("neuron"), bins, lo, hi)
    assert got.device.type == "neuron" and got.dtype == dtype
    torch.testing.assert_close(got.cpu(), _reference(x, bins, lo, hi), rtol=0, atol=0)


def test_int_histc_constant_and_empty_inputs():
    same = torch.full((6,), 4, dtype=torch.int32)  # min == max: widened to [3, 5]
    torch.testing.assert_close(torch.histc(same.to("neuron"), 3).cpu(), _reference(same, 3, 0, 0))
    empty = torch.empty(0, dtype=torch.int64)
    got = torch.histc(empty.to("neuron"), 4, 0, 3)
    assert got.dtype == torch.int64 and got.cpu().tolist() == [0, 0, 0, 0]


def test_int_histc_errors_like_cuda():
    x = torch.arange(4, dtype=torch.int32, device="neuron")
    with pytest.raises(RuntimeError, match="bins must be > 0"):
        torch.histc(x, 0)
    with pytest.raises(RuntimeError, match="max must be larger than min"):
        torch.histc(x, 4, 3, 1)


def test_float_histc_keeps_cpus_kernel():
    x = torch.randn(50, generator=torch.Generator().manual_seed(0))
    for lo, hi in ((-1.0, 1.0), (0, 0)):
        torch.testing.assert_close(
            torch.histc(x.to("neuron"), 7, lo, hi).cpu(), torch.histc(x, 7, lo, hi)
        )


def test_int_histc_fake_tensor_propagation():
    with FakeTensorMode():
        x = torch.empty(10, dtype=torch.int32, device="neuron")
        out = torch.histc(x, bins=5, min=0, max=4)
    assert out.shape == (5,) and out.dtype == torch.int32 and out.device.type == "neuron"


def test_int_histc_compiled():
    def f(ids):
        return torch.histc(ids.int(), bins=4, min=0, max=3).cumsum(0)

    ids = torch.randint(0, 5, (33,), generator=torch.Generator().manual_seed(1))
    got = torch.compile(f, backend="neuron")(ids.to("neuron"))
    want = _reference(ids.int(), 4, 0, 3).cumsum(0)
    torch.testing.assert_close(got.cpu(), want, rtol=0, atol=0)


class _TinyMoE(torch.nn.Module):
    """Top-2 routing whose per-expert token counts come from histc, as transformers' MoE layers
    count them (integrations/moe.py: float ids on CPU, int ids on other devices). The counts
    scale each expert's output, so a wrong count changes the loss and the gradients."""

    def __init__(self, dim=8, experts=4):
        super().__init__()
        self.experts = experts
        self.router = torch.nn.Linear(dim, experts)
        self.w = torch.nn.Parameter(torch.randn(experts, dim, dim) / dim**0.5)

    def forward(self, x):
        weights, ids = self.router(x).softmax(-1).topk(2, dim=-1)
        flat = torch.sort(ids.reshape(-1)).values
        ids_h = flat.float() if x.device.type == "cpu" else flat.int()
        counts = torch.histc(ids_h, bins=self.experts, min=0, max=self.experts - 1)
        load = counts.float() / flat.numel()
        chosen = torch.nn.functional.one_hot(ids, self.experts).float()  # tokens, k, experts
        gate = (chosen * weights.unsqueeze(-1)).sum(1) * load  # tokens, experts
        return torch.einsum("te,edf,td->tf", gate, self.w, x)


def _build_moe():
    torch.manual_seed(0)
    return _TinyMoE(), {"x": torch.randn(24, 8)}


def test_moe_with_int_histc_trains_like_cpu():
    for outcome in train_check.check("tiny-moe", _build_moe, modes=("eager", "compiled")):
        assert outcome.status == "pass", f"{outcome.mode}: {outcome.detail}"
        assert outcome.fallbacks == [], outcome.fallbacks
