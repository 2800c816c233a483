"""AWS's NKI Library collective kernels (tests/nki/public_collective_kernels.py, verbatim but for
their imports) run across ranks with nki.run_ranks: each against its documented example and
torch, float32 and bfloat16, 2 and 4 ranks."""

import pytest
import torch
from public_collective_kernels import (
    all_gather_hbm_kernel,
    all_reduce_hbm_kernel,
    all_to_all_hbm_kernel,
    allgather_sb2sb,
    allgather_sb2sb_tiled,
    reduce_scatter_hbm_kernel,
)

from torch_neuronx import nki
from torch_neuronx.nki.collectives import ReplicaGroup


def _sum(xs):
    return torch.stack([x.float() for x in xs]).sum(0).to(xs[0].dtype)


def test_documented_examples():
    rg = ReplicaGroup([[0, 1]])
    a = torch.tensor([[1.0, 2, 3], [4, 5, 6]])
    b = torch.tensor([[7.0, 8, 9], [10, 11, 12]])
    for o in nki.run_ranks(all_reduce_hbm_kernel, [(a.to("neuron"), rg)] * 2):
        assert o.cpu().tolist() == [[2, 4, 6], [8, 10, 12]]
    for o in nki.run_ranks(
        all_gather_hbm_kernel, [(a.to("neuron"), rg, 2), (b.to("neuron"), rg, 2)]
    ):
        assert o.cpu().tolist() == [[1, 2, 3], [4, 5, 6], [7, 8, 9], [10, 11, 12]]
    x = torch.tensor([[1.0] * 3, [2.0] * 3, [3.0] * 3, [4.0] * 3])
    outs = nki.run_ranks(reduce_scatter_hbm_kernel, [(x.to("neuron"), rg, 2)] * 2)
    assert [o.cpu().tolist() for o in outs] == [[[2] * 3, [4] * 3], [[6] * 3, [8] * 3]]
    outs = nki.run_ranks(all_to_all_hbm_kernel, [(a.to("neuron"), rg), (b.to("neuron"), rg)])
    assert [o.cpu().tolist() for o in outs] == [[[1, 2, 3], [7, 8, 9]], [[4, 5, 6], [10, 11, 12]]]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("n", [2, 4])
def test_hbm_kernels_against_torch(dtype, n):
    rg = ReplicaGroup([list(range(n))])
    xs = [torch.randn(128 * n, 64).to(dtype) for _ in range(n)]
    dev = [x.to("neuron") for x in xs]
    for o in nki.run_ranks(all_reduce_hbm_kernel, [(x, rg) for x in dev]):
        assert torch.equal(o.cpu(), _sum(xs))
    for o in nki.run_ranks(all_gather_hbm_kernel, [(x, rg, n) for x in dev]):
        assert torch.equal(o.cpu(), torch.cat(xs))
    for r, o in enumerate(nki.run_ranks(reduce_scatter_hbm_kernel, [(x, rg, n) for x in dev])):
        assert torch.equal(o.cpu(), _sum(xs).chunk(n)[r])
    for r, o in enumerate(nki.run_ranks(all_to_all_hbm_kernel, [(x, rg) for x in dev])):
        assert torch.equal(o.cpu(), torch.cat([x.chunk(n)[r] for x in xs]))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_sbuf_to_sbuf_all_gather(dtype):
    n = 4
    rg = ReplicaGroup([list(range(n))])
    xs = [torch.randn(128, 96).to(dtype) for _ in range(n)]
    for o in nki.run_ranks(allgather_sb2sb, [(x.to("neuron"), rg, n) for x in xs]):
        assert torch.equal(o.cpu(), torch.cat(xs, 1))
    # the tiled kernel, M = 256 rows: one 128-row tile per program of an LNC=2 launch
    xs = [torch.randn(256, 64).to(dtype) for _ in range(n)]
    for o in nki.run_ranks(allgather_sb2sb_tiled[2], [(x.to("neuron"), rg, n) for x in xs]):
        assert torch.equal(o.cpu(), torch.cat(xs, 1))
