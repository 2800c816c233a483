"""CPU's memory-overlap checks hold on neuron (issue 13, fuzz bug "overlap-checks-missing").

An op whose written tensor shares memory with one of its inputs in a way the kernel cannot
handle raises on CPU ("unsupported operation: some elements of the input tensor and the
written-to tensor refer to a single memory location"). On neuron, arguments that share a device
storage now get one host storage (csrc/eager/kernel.cpp: alias_arg), so the same checks fire;
legal sharing (disjoint views, the same tensor) still gives CPU's results.
"""

from __future__ import annotations

import warnings

import pytest
import torch

DEV = "neuron"


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _i(d, *v):
    return torch.tensor(list(v), device=d)


# Each case: f(dev) -> tensors to compare; CPU raises an overlap error for every one.
OVERLAPPING = {
    "add_ shifted view": lambda d: (lambda x: x[1:].add_(x[:-1]))(torch.arange(4.0, device=d)),
    "mul_ transposed self": lambda d: (lambda x: x.mul_(x.t()))(torch.ones(3, 3, device=d)),
    "out= partially overlapping input": lambda d: (lambda x: torch.add(x[:-1], 1, out=x[1:]))(
        torch.arange(5.0, device=d)
    ),
    "out= overlapping second input": lambda d: (lambda x: torch.mul(x[:3], x[1:4], out=x[2:5]))(
        torch.arange(6.0, device=d)
    ),
    "setitem with self as value": lambda d: (lambda t: t.__setitem__(_i(d, 0), t))(
        torch.zeros(1, 3, dtype=torch.uint8, device=d)
    ),
    "index_copy_ from a view of self": lambda d: (lambda x: x.index_copy_(0, _i(d, 0), x[1:2]))(
        torch.arange(6.0, device=d).view(3, 2)
    ),
    "index_add_ from self": lambda d: (lambda x: x.index_add_(0, _i(d, 0, 1, 2), x))(
        torch.arange(6.0, device=d).view(3, 2)
    ),
    "scatter_reduce_ from a view of self": lambda d: (
        lambda x: x.scatter_reduce_(0, _i(d, 0, 1), x[1:], "sum")
    )(torch.arange(3.0, device=d)),
    "bitwise_xor_ shifted view": lambda d: (lambda x: x[1:].bitwise_xor_(x[:-1]))(
        torch.arange(5, device=d)
    ),
    "float64 add_ shifted view": lambda d: (lambda x: x[1:].add_(x[:-1]))(
        torch.arange(4.0, dtype=torch.float64, device=d)
    ),
}


@pytest.mark.parametrize("name", sorted(OVERLAPPING))
def test_overlap_is_refused_as_on_cpu(name):
    with pytest.raises(RuntimeError) as cpu:
        OVERLAPPING[name]("cpu")
    with pytest.raises(RuntimeError) as dev:
        OVERLAPPING[name](DEV)
    first = str(cpu.value).splitlines()[0]
    assert str(dev.value).splitlines()[0] == first


# Legal sharing: disjoint views of one storage, the same tensor twice, full overlap.
SHARING = {
    "disjoint views": lambda d: (lambda x: (x[:2].add_(x[2:]), x)[1])(torch.arange(4.0, device=d)),
    "same tensor": lambda d: (lambda x: (x.add_(x), x)[1])(torch.arange(4.0, device=d)),
    "same tensor float64": lambda d: (lambda x: (x.sub_(x), x)[1])(
        torch.full((3,), 1.6, dtype=torch.float64, device=d)
    ),
    "out= is the input": lambda d: (lambda x: torch.mul(x, 2, out=x))(torch.arange(4.0, device=d)),
    "view of the whole storage": lambda d: (lambda x: (x.add_(x.view(2, 2)), x)[1])(
        torch.arange(4.0, device=d).view(2, 2)
    ),
    "rows of one matrix": lambda d: (lambda x: torch.mm(x[:2], x[2:].t()))(
        torch.arange(12.0, device=d).view(4, 3)
    ),
    "cat of views": lambda d: (lambda x: torch.cat([x[:2], x[1:], x]))(torch.arange(4.0, device=d)),
    "index_put_ with another view": lambda d: (
        lambda x: (x[0].index_put_((_i(d, 1),), x[1, :1]), x)[1]
    )(torch.arange(6.0, device=d).view(2, 3)),
    "out= resized, sharing nothing": lambda d: (
        lambda x, o: (torch.add(x[:2], x[2:], out=o), o)[1]
    )(torch.arange(4.0, device=d), torch.empty(0, device=d)),
}


@pytest.mark.parametrize("name", sorted(SHARING))
def test_legal_sharing_gives_cpu_results(name):
    c, n = SHARING[name]("cpu"), SHARING[name](DEV)
    assert n.device.type == DEV
    assert n.shape == c.shape and n.stride() == c.stride()
    torch.testing.assert_close(n.cpu(), c, rtol=0, atol=0)


def test_arguments_sharing_storage_stay_bound_to_their_tensors():
    """Two views of one storage passed to one op: results land in the caller's tensors, and the
    caller's tensors keep their own geometry (the shared host storage is per call)."""
    x = torch.arange(8.0, device=DEV)
    a, b = x[:4], x[4:]
    torch.add(a, 1, out=b)
    assert x.cpu().tolist() == [0, 1, 2, 3, 1, 2, 3, 4]
    assert a.storage_offset() == 0 and b.storage_offset() == 4
    a.mul_(b)
    assert x.cpu().tolist() == [0, 2, 6, 12, 1, 2, 3, 4]


def test_overlap_among_many_arguments():
    """Calls with many neuron arguments (a foreach op over a model's parameters) find the shared
    storage through a map instead of a scan; the checks fire there too."""

    def run(d):
        base = torch.arange(40.0, device=d)
        views = [base[i * 2 : (i + 1) * 2] for i in range(20)]
        torch._foreach_add_(views[1:] + [base[1:3]], views[:-1] + [base[0:2]])

    with pytest.raises(RuntimeError, match="single memory location"):
        run("cpu")
    with pytest.raises(RuntimeError, match="single memory location"):
        run(DEV)
    # disjoint views of one storage among many arguments: CPU's results
    res = {}
    for d in ("cpu", DEV):
        base = torch.arange(40.0, device=d)
        views = [base[i * 2 : (i + 1) * 2] for i in range(20)]
        torch._foreach_mul_(views[::2], views[1::2])
        res[d] = base.cpu()
    assert torch.equal(res[DEV], res["cpu"])
