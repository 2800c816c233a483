"""examples/nki/row_parallel_linear.py: a 2-rank (and 4-rank) row-parallel linear layer whose
partial products are summed by nki.collectives.all_reduce, against torch in float32 and
bfloat16; every rank holds the same result."""

import pytest
import row_parallel_linear as rpl
import torch

TOL = {torch.float32: dict(rtol=1e-4, atol=1e-4), torch.bfloat16: dict(rtol=2e-2, atol=2e-2)}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("ranks", [2, 4])
def test_row_parallel_linear_matches_torch(dtype, ranks):
    x = torch.randn(200, 512).to(dtype)
    w = torch.randn(512, 700).to(dtype)
    outs = rpl.linear(x, w, ranks)
    assert len(outs) == ranks
    ref = rpl.reference(x, w)
    for o in outs:
        assert o.device.type == "neuron" and o.dtype == dtype
        assert torch.equal(o.cpu(), outs[0].cpu())
        torch.testing.assert_close(o.cpu().float(), ref.float(), **TOL[dtype])
    rep = rpl.row_parallel_linear.last_report
    assert rep.instructions["collective"] == 4  # one all-reduce per 128 x 512 output tile
    assert rep.modeled_busy["collective"] > 0


def test_the_kernel_as_an_nki_op_under_run_ranks():
    """run_ranks launches any callable per rank: here a torch custom op (nki_op) whose kernel
    issues the collective, through the neuron device's eager path."""
    from torch_neuronx import nki
    from torch_neuronx.nki import collectives as ncc

    @nki.nki_op("nki_test::row_parallel_linear", mutates_args={})
    def op(xT: torch.Tensor, w: torch.Tensor, ranks: int) -> torch.Tensor:
        return rpl.row_parallel_linear(xT, w, ncc.ReplicaGroup([list(range(ranks))]))

    x, w = torch.randn(64, 256), torch.randn(256, 128)
    args = [
        (
            x[:, r * 128 : (r + 1) * 128].t().contiguous().to("neuron"),
            w[r * 128 : (r + 1) * 128].to("neuron"),
            2,
        )
        for r in range(2)
    ]
    for o in nki.run_ranks(op, args):
        torch.testing.assert_close(o.cpu(), x @ w, **TOL[torch.float32])
