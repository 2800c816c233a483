"""evaluate/untraced.py: the collector's callbacks run outside Dynamo without importing it."""

from __future__ import annotations

import json
import subprocess
import sys

_CHILD = r"""
import json, sys, torch, torch_neuronx
from torch_neuronx.evaluate.untraced import untraced

calls = []
def fn(t):
    calls.append(1)
    return torch.sin(t)

wrapped = untraced(fn, "test")
x = torch.randn(3)
assert torch.equal(wrapped(x), torch.sin(x))
before = "torch._dynamo" in sys.modules

import torch._dynamo
from torch._dynamo.utils import counters

def run(w):
    counters.clear()
    torch._dynamo.reset()
    out = torch.compile(lambda t: w(t + 1) * 2, backend="eager")(x)
    assert torch.allclose(out, torch.sin(x + 1) * 2)
    return {"breaks": sum(counters["graph_break"].values()), "frames": counters["frames"]["total"]}

print(json.dumps({
    "dynamo_before": before,
    "untraced": run(wrapped),
    "disable": run(torch.compiler.disable(fn, reason="test")),
    "calls": len(calls),
}))
"""


def test_no_dynamo_import_and_traced_as_compiler_disable():
    out = subprocess.run(
        [sys.executable, "-c", _CHILD], capture_output=True, text=True, timeout=300, check=True
    )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    # an evaluated script that never compiles does not pay for importing Dynamo
    assert got["dynamo_before"] is False
    # once Dynamo is loaded: one graph break at the call, nothing of the wrapper traced, the
    # same frames as torch.compiler.disable (without the skip registration: 3 breaks, 7 frames)
    assert got["untraced"] == got["disable"] == {"breaks": 1, "frames": got["disable"]["frames"]}
    assert got["calls"] == 3
