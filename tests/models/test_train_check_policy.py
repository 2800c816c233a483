"""A compiled model refused by the documented compile policy (an op that is not native on
Neuron in its graph: Qwen3-Next's and Qwen3.5's chunked gated delta rule call
`torch.linalg.solve_triangular`, an explicit host fallback) is run as the error advises, with
``options={"fallback_execution": True}``, and reported as ``policy_pass`` when it matches CPU,
not as a failure of the backend nor as a plain pass."""

import pytest
import torch

from torch_neuronx.compile import NonNativeOpsError
from torch_neuronx.testing.model_zoo import report, train_check


class _ChunkSolve(torch.nn.Module):
    """The shape of the gated delta rule's chunk step: a unit lower-triangular system."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        k = self.lin(x)
        system = torch.tril(k @ k.T * 0.1, -1) + torch.eye(x.shape[0], device=x.device)
        return torch.linalg.solve_triangular(system, k, upper=False, unitriangular=True)


def _build():
    torch.manual_seed(0)
    return _ChunkSolve(), {"x": torch.randn(4, 8)}


def test_the_default_compile_refuses_the_graph_naming_its_ops():
    torch._dynamo.reset()
    model, batch = _build()
    compiled = torch.compile(model.to("neuron"), backend="neuron")
    with pytest.raises(Exception) as info:
        compiled(batch["x"].to("neuron"))
    root = train_check._root(info.value)
    assert isinstance(root, NonNativeOpsError)
    assert root.ops == ["aten::linalg_solve_triangular"]
    assert "fallback_execution" in str(root)
    torch._dynamo.reset()


def test_a_refused_model_is_run_with_fallback_execution_and_says_so():
    (outcome,) = train_check.check("test:chunk_solve", _build, modes=("compiled",))
    assert outcome.status == "policy_pass", outcome.detail
    assert outcome.refused_ops == ["aten::linalg_solve_triangular"]
    assert "fallback_execution" in outcome.detail and "matches CPU" in outcome.detail
    row = {k: v for k, v in vars(outcome).items() if k != "dev"}
    text = report.section([row], {})
    assert "| test | compiled | 1 | 0 | 0 | 0 | 0 | 0 | 1 |" in text
