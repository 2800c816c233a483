"""Backend registration: the ``torch_dynamo_backends`` entry point and set_default_backend."""

from __future__ import annotations

import torch

from torch_neuronx.testing import child


def test_backend_found_by_name_without_importing_torch_neuronx():
    """A user script that never imports torch_neuronx can say backend="neuron"."""
    child.run_ok(
        """
        import torch
        from torch._dynamo.backends.registry import list_backends, lookup_backend
        fn = lookup_backend("neuron")
        assert "neuron" in list_backends(), list_backends()
        name = f"{fn.__module__}:{fn.__name__}"
        assert name == "torch_neuronx.compile.backend:neuron_backend", name
        out = torch.compile(lambda x: x * 2 + 1, backend="neuron")(torch.ones(3, device="neuron"))
        assert out.device.type == "neuron", out.device
        assert out.cpu().tolist() == [3.0, 3.0, 3.0], out
        """,
        env={"PYTHONPATH": ""},
    )  # only the installed package


def test_set_default_backend_makes_plain_compile_use_neuron(device):
    from torch_neuronx.compile import get_dynamo_metrics

    prev = torch.compiler.get_default_backend()
    torch.compiler.set_default_backend("neuron")
    try:
        f = torch.compile(lambda x: x - 1)
        out = f(torch.ones(2, device=device))
    finally:
        torch.compiler.set_default_backend(prev)
    torch.testing.assert_close(out.cpu(), torch.zeros(2))
    assert len(get_dynamo_metrics()) == 1
