"""A 64-bit op writing an out= argument gives it CPU's layout (issue 13, fuzz bug
"f64-out-layout": `torch.mul(x.mT, 0.0, out=o)` with `o` of another size came back contiguous).

float64/complex128 arithmetic reads float32-precision copies of its inputs
(csrc/eager/kernel.cpp, "64-bit floating point on the NeuronCore"); those copies keep the
inputs' strides, so an out= argument that the kernel resizes follows the inputs' layout as on
CPU. Each case compares sizes, strides and values with CPU.
"""

from __future__ import annotations

import warnings

import pytest
import torch

DEV = "neuron"
F32_TOL = {"atol": 1e-5, "rtol": 1.3e-6}


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _base(dtype):
    return torch.randn(2, 4, 3, dtype=dtype, generator=torch.Generator().manual_seed(0))


LAYOUTS = {
    "mT": lambda x: x.mT,
    "permuted": lambda x: x.permute(2, 0, 1),
    "strided slice": lambda x: x[:, ::2],
    "expanded": lambda x: x[:1].expand(3, 4, 3),
    "contiguous": lambda x: x,
}
OPS = {
    "mul scalar": lambda a, o: torch.mul(a, 0.5, out=o),
    "add tensors": lambda a, o: torch.add(a, a, alpha=2, out=o),
    "sin": lambda a, o: torch.sin(a, out=o),
    "abs (moves bits)": lambda a, o: torch.abs(a, out=o),
    "neg (moves bits)": lambda a, o: torch.neg(a, out=o),
    "sum over a dim": lambda a, o: torch.sum(a, 1, out=o),
    "cumsum": lambda a, o: torch.cumsum(a, 1, out=o),
}
OUTS = {
    "wrong size": lambda dt, d: torch.zeros(5, dtype=dt, device=d),
    "empty": lambda dt, d: torch.empty(0, dtype=dt, device=d),
}


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128], ids=["float64", "complex128"])
@pytest.mark.parametrize("out", sorted(OUTS))
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("op", sorted(OPS))
def test_resized_out_has_cpu_layout(op, layout, out, dtype):
    if dtype is torch.complex128 and op in ("abs (moves bits)",):
        pytest.skip("abs of complex128 is real: out= must be float64 (a dtype error on both)")
    x = _base(dtype)
    res = {}
    for d in ("cpu", DEV):
        o = OUTS[out](dtype, d)
        r = OPS[op](LAYOUTS[layout](x.to(d)), o)
        assert r is o
        res[d] = o
    c, n = res["cpu"], res[DEV]
    assert (
        n.shape == c.shape and n.stride() == c.stride() and n.storage_offset() == c.storage_offset()
    )
    torch.testing.assert_close(n.cpu(), c, **F32_TOL)


def test_fuzz_reproducer():
    """The fuzzer's shrunk program (seeded, so CPU and neuron see the same input)."""
    x = _base(torch.float64)
    res = {}
    for d in ("cpu", DEV):
        o = torch.randn(5, dtype=torch.float64).to(d)
        torch.mul(x.to(d).mT, 0.0, out=o)
        res[d] = o
    assert res[DEV].stride() == res["cpu"].stride() == (12, 1, 3)
    assert torch.equal(res[DEV].cpu().signbit(), res["cpu"].signbit())  # -0.0 where x < 0
