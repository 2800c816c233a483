"""nki.collectives' rules: each broken rule is an NkiValidationError (or NkiUnsupportedError
for what is not simulated) naming the kernel line; ranks that do not meet are a deadlock
error, not a hang."""

import pytest
import torch

import torch_neuronx.nki.collectives as ncc
import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
from torch_neuronx import nki
from torch_neuronx.nki import NkiUnsupportedError, NkiValidationError
from torch_neuronx.nki.collectives import ReplicaGroup

RG2 = ReplicaGroup([[0, 1]])


def _two(kernel, *extra, shape=(8, 8), dtype=torch.float32):
    return nki.run_ranks(
        kernel, [(torch.randn(shape).to(dtype).to("neuron"), *extra) for _ in range(2)]
    )


def _raises(match, fn, *args, cls=NkiValidationError):
    with pytest.raises(cls, match=match) as info:
        fn(*args)
    assert "test_collectives_rules.py" in str(info.value)  # names the kernel line
    return info.value


@nki.jit
def misuse(x, what):
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    h = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    p = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.psum)
    nisa.dma_copy(dst=t, src=x)
    if what == "mix":
        ncc.all_reduce(srcs=[t], dsts=[h], replica_group=RG2, op=nl.add)
    elif what == "coalesced_sbuf":
        ncc.all_reduce(srcs=[t, t], dsts=[t, t], replica_group=RG2, op=nl.add)
    elif what == "psum":
        ncc.all_reduce(srcs=[t], dsts=[p], replica_group=RG2, op=nl.add)
    elif what == "op":
        ncc.all_reduce(srcs=[t], dsts=[t], replica_group=RG2, op=nl.multiply)
    elif what == "hbm_dim":
        g = nl.ndarray((x.shape[0], 2 * x.shape[1]), dtype=x.dtype, buffer=nl.shared_hbm)
        ncc.all_gather(srcs=[x], dsts=[g], replica_group=RG2, collective_dim=1)
    elif what == "gather_shape":
        ncc.all_gather(srcs=[t], dsts=[t], replica_group=RG2, collective_dim=0)
    elif what == "dtype":
        b = nl.ndarray(x.shape, dtype=nl.bfloat16, buffer=nl.sbuf)
        ncc.all_reduce(srcs=[t], dsts=[b], replica_group=RG2, op=nl.add)
    elif what == "priority":
        ncc.all_reduce(srcs=[t], dsts=[t], replica_group=RG2, op=nl.add, priority=0)
    elif what == "not_a_list":
        ncc.all_reduce(srcs=t, dsts=[t], replica_group=RG2, op=nl.add)
    elif what == "a2a_sbuf":
        ncc.all_to_all(srcs=[t], dsts=[t], replica_group=RG2, collective_dim=0)
    elif what == "group":
        ncc.all_reduce(srcs=[t], dsts=[t], replica_group=[[0, 1]], op=nl.add)
    elif what == "outside":
        ncc.all_reduce(srcs=[t], dsts=[t], replica_group=ReplicaGroup([[1]]), op=nl.add)
    elif what == "gather_v_ranks":
        m = nl.ndarray((3, 2), dtype=nl.uint32, buffer=nl.shared_hbm)
        ncc.all_gather_v(srcs=[h], dsts=[h], replica_group=RG2, metadata_tensor=m)
    return h


@pytest.mark.parametrize(
    "what, match",
    [
        ("mix", "all be in HBM or all in SBUF"),
        ("coalesced_sbuf", "only for HBM tensors"),
        ("psum", "must be in SBUF or HBM"),
        ("op", "nl.add, nl.minimum or nl.maximum"),
        ("hbm_dim", "collective_dim must be 0"),
        ("gather_shape", r"must have shape \(16, 8\)"),
        ("dtype", "does not convert"),
        ("priority", "NeuronCore-v4"),
        ("not_a_list", "srcs must be a list"),
        ("a2a_sbuf", "must be in HBM"),
        ("group", "must be an nki.collectives.ReplicaGroup"),
        ("gather_v_ranks", "exactly 4 ranks"),
    ],
)
def test_rule_violations_name_the_kernel_line(what, match):
    _raises(match, _two, misuse, what)


def test_a_rank_outside_every_sub_group():
    _raises("rank 0, which is in no sub-group", _two, misuse, "outside")


def test_replica_groups_must_not_overlap():
    with pytest.raises(NkiValidationError, match="in two sub-groups"):
        ncc.ReplicaGroup([[0, 1], [1, 2]])
    with pytest.raises(NkiValidationError, match="list of lists"):
        ReplicaGroup([0, 1])


@nki.jit
def reduce_kernel(x, rg, skip=False, rows=None):
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    if not skip:
        ncc.all_reduce(srcs=[t], dsts=[t], replica_group=rg, op=nl.add)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out


def test_a_rank_that_skips_a_collective_is_a_deadlock():
    args = [(torch.randn(4, 4).to("neuron"), RG2, skip) for skip in (False, True)]
    _raises(
        "deadlock: rank 0 waits at ncc.all_reduce.*rank 1 has ended",
        nki.run_ranks,
        reduce_kernel,
        args,
    )


def test_ranks_that_disagree_on_shapes_or_collectives():
    args = [(torch.randn(4, 4).to("neuron"), RG2), (torch.randn(8, 4).to("neuron"), RG2)]
    _raises(
        r"rank 0's sources are \(4, 4\) float32, this rank's \(rank 1\) \(8, 4\)",
        nki.run_ranks,
        reduce_kernel,
        args,
    )

    @nki.jit
    def mixed(x, which):
        t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        if which:
            ncc.all_reduce(srcs=[t], dsts=[t], replica_group=RG2, op=nl.add)
        else:
            ncc.all_reduce(srcs=[t], dsts=[t], replica_group=RG2, op=nl.maximum)
        return x

    args = [(torch.randn(4, 4).to("neuron"), w) for w in (True, False)]
    _raises(
        "rank 0 issues it with op='add', this rank \\(rank 1\\) with op='maximum'",
        nki.run_ranks,
        mixed,
        args,
    )


def test_a_single_launch_names_run_ranks():
    e = _raises(
        r"single rank.*run_ranks",
        reduce_kernel,
        torch.randn(4, 4).to("neuron"),
        RG2,
        cls=NkiUnsupportedError,
    )
    assert "ranks [1]" in str(e)
    # a one-rank group needs no partner: the collective is a copy
    x = torch.randn(4, 4)
    assert torch.equal(reduce_kernel(x.to("neuron"), ReplicaGroup([[0]])).cpu(), x)


def test_collectives_inside_an_lnc_pair_that_uses_sendrecv():
    @nki.jit
    def both(x):
        t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        nisa.sendrecv(src=t, dst=t, send_to_rank=0, recv_from_rank=0, pipe_id=0)
        ncc.all_reduce(srcs=[t], dsts=[t], replica_group=ReplicaGroup([[0]]), op=nl.add)
        return x

    _raises(
        "sendrecv/core_barrier is not simulated",
        both[2],
        torch.randn(4, 4).to("neuron"),
        cls=NkiUnsupportedError,
    )


@nki.jit
def a2av(x, meta):
    d = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    ncc.all_to_all_v(srcs=[x], dsts=[d], replica_group=RG2, metadata_tensor=meta)
    return d


def test_variable_counts_are_checked_at_execution():
    x = torch.randn(2, 4)
    big = torch.tensor([[5, 5], [0, 0], [0, 0]], dtype=torch.uint32)  # 5 > slot of 4
    args = [(x.to("neuron"), big.to("neuron")) for _ in range(2)]
    _raises("more than its slot of 4", nki.run_ranks, a2av, args)
    bad = torch.tensor([[1, 1], [8, 0], [0, 0]], dtype=torch.uint32)  # elements [8, 9) of 8
    args = [(x.to("neuron"), bad.to("neuron")) for _ in range(2)]
    _raises(r"asks for elements \[8, 9\)", nki.run_ranks, a2av, args)
    wrong = torch.zeros(3, 2, dtype=torch.int32)
    _raises("must be uint32", nki.run_ranks, a2av, [(x.to("neuron"), wrong.to("neuron"))] * 2)


def test_shapes_only_runs_check_the_rules_and_exchange_nothing():
    """Fake tensors (torch.compile's trace, an nki_op's fake implementation): one launch, no
    partner ranks, the rules still checked."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x = torch.empty(8, 8, device="neuron")
        assert reduce_kernel(x, RG2).shape == (8, 8)
        with pytest.raises(NkiValidationError, match="all be in HBM or all in SBUF"):
            misuse(x, "mix")
