"""Backend registration: the ``torch_dynamo_backends`` entry point and set_default_backend."""
from __future__ import annotations

import json

import torch

from neuron_compile_utils import run_python


def test_backend_found_by_name_without_importing_torch_neuronx():
    """A user script that never imports torch_neuronx can say backend="neuron"."""
    code = """
    import json, os, sys, torch
    from torch._dynamo.backends.registry import list_backends, lookup_backend
    fn = lookup_backend("neuron")
    dev = os.environ["TORCH_NEURONX_COMPILE_TEST_DEVICE"]
    out = torch.compile(lambda x: x * 2 + 1, backend="neuron")(torch.ones(3, device=dev))
    print("RESULT" + json.dumps({
        "listed": "neuron" in list_backends(),
        "fn": f"{fn.__module__}:{fn.__name__}",
        "out": out.cpu().tolist(),
    }))
    """
    proc = run_python(code, env={"PYTHONPATH": ""})  # only the installed package
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = [l for l in proc.stdout.splitlines() if l.startswith("RESULT")][-1]
    res = json.loads(line[len("RESULT"):])
    assert res["listed"]
    assert res["fn"] == "torch_neuronx.compile.backend:neuron_backend"
    assert res["out"] == [3.0, 3.0, 3.0]


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
