"""nki.collectives against PyTorch: each collective of NKI 2.33 run across the ranks of
nki.run_ranks (one launch per rank, rank r's tensors on neuron:r), compared with the same
computation written with torch ops over the ranks' inputs, in float32 and bfloat16."""

import pytest
import torch

import torch_neuronx.nki.collectives as ncc
import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
from torch_neuronx import nki
from torch_neuronx.nki.collectives import ReplicaGroup

DTYPES = (torch.float32, torch.bfloat16)
OPS = {"add": (nl.add, "sum"), "maximum": (nl.maximum, "amax"), "minimum": (nl.minimum, "amin")}


def _reduce(xs, how):
    """The torch reference of a reduction over ranks: float32, rounded once."""
    return getattr(torch.stack([x.float() for x in xs]), how)(0).to(xs[0].dtype)


def _ranks(inputs, *extra):
    return [
        (x.to(f"neuron:{r % torch.neuron.device_count()}"), *extra) for r, x in enumerate(inputs)
    ]


@nki.jit
def hbm_collective(x, rg, which, op=None, out_rows=None):
    """AWS's nki-library test pattern: copy the input to an internal HBM tensor, run the
    collective into another, copy that to the output."""
    rows = out_rows or x.shape[0]
    src = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm, name="src")
    dst = nl.ndarray((rows, x.shape[1]), dtype=x.dtype, buffer=nl.shared_hbm, name="dst")
    out = nl.ndarray((rows, x.shape[1]), dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=src, src=x)
    if which == "all_reduce":
        ncc.all_reduce(srcs=[src], dsts=[dst], replica_group=rg, op=op)
    elif which == "all_gather":
        ncc.all_gather(srcs=[src], dsts=[dst], replica_group=rg, collective_dim=0)
    elif which == "reduce_scatter":
        ncc.reduce_scatter(srcs=[src], dsts=[dst], replica_group=rg, collective_dim=0, op=op)
    elif which == "all_to_all":
        ncc.all_to_all(srcs=[src], dsts=[dst], replica_group=rg, collective_dim=0)
    nisa.dma_copy(dst=out, src=dst)
    return out


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("opname", list(OPS))
def test_all_reduce_matches_a_reduction_over_ranks(dtype, opname):
    op, how = OPS[opname]
    xs = [torch.randn(64, 32).to(dtype) for _ in range(4)]
    outs = nki.run_ranks(hbm_collective, _ranks(xs, ReplicaGroup([[0, 1, 2, 3]]), "all_reduce", op))
    ref = _reduce(xs, how)
    for o in outs:
        assert torch.equal(o.cpu(), ref)


@pytest.mark.parametrize("dtype", DTYPES)
def test_sub_groups_reduce_separately(dtype):
    xs = [torch.randn(16, 8).to(dtype) for _ in range(4)]
    rg = ReplicaGroup([[0, 2], [1, 3]])
    outs = nki.run_ranks(hbm_collective, _ranks(xs, rg, "all_reduce", nl.add))
    for r, o in enumerate(outs):
        assert torch.equal(o.cpu(), _reduce([xs[r % 2], xs[r % 2 + 2]], "sum"))


@pytest.mark.parametrize("dtype", DTYPES)
def test_all_gather_reduce_scatter_all_to_all_on_hbm(dtype):
    n = 4
    xs = [torch.randn(8 * n, 16).to(dtype) for _ in range(n)]
    rg = ReplicaGroup([[0, 1, 2, 3]])
    gathered = nki.run_ranks(hbm_collective, _ranks(xs, rg, "all_gather", None, 8 * n * n))
    for o in gathered:
        assert torch.equal(o.cpu(), torch.cat(xs))
    scattered = nki.run_ranks(hbm_collective, _ranks(xs, rg, "reduce_scatter", nl.add, 8))
    for r, o in enumerate(scattered):
        assert torch.equal(o.cpu(), _reduce(xs, "sum")[8 * r : 8 * r + 8])
    exchanged = nki.run_ranks(hbm_collective, _ranks(xs, rg, "all_to_all"))
    for r, o in enumerate(exchanged):
        assert torch.equal(o.cpu(), torch.cat([x[8 * r : 8 * r + 8] for x in xs]))


def test_sub_group_order_is_the_collective_order():
    """all_gather concatenates in the order of the sub-group's list, not of rank ids."""
    xs = [torch.full((2, 4), float(r)) for r in range(2)]
    outs = nki.run_ranks(hbm_collective, _ranks(xs, ReplicaGroup([[1, 0]]), "all_gather", None, 4))
    for o in outs:
        assert torch.equal(o.cpu(), torch.cat([xs[1], xs[0]]))


@nki.jit
def sbuf_collective(x, rg, which, n):
    """SBUF-to-SBUF collectives (AWS's allgather_sb2sb pattern): tiles on chip."""
    P, F = x.shape
    t = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    if which == "gather_free":
        shape = (P, F * n)
        g = nl.ndarray(shape, dtype=x.dtype, buffer=nl.sbuf)
        ncc.all_gather(dsts=[g], srcs=[t], replica_group=rg, collective_dim=1)
    elif which == "gather_partitions":
        shape = (P * n, F)
        g = nl.ndarray(shape, dtype=x.dtype, buffer=nl.sbuf)
        ncc.all_gather(dsts=[g], srcs=[t], replica_group=rg, collective_dim=0)
    else:
        shape = (P // n, F)
        g = nl.ndarray(shape, dtype=x.dtype, buffer=nl.sbuf)
        ncc.reduce_scatter(dsts=[g], srcs=[t], replica_group=rg, collective_dim=0, op=nl.add)
    out = nl.ndarray(shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=g)
    return out


@pytest.mark.parametrize("dtype", DTYPES)
def test_sbuf_collectives(dtype):
    n = 2
    xs = [torch.randn(32, 24).to(dtype) for _ in range(n)]
    rg = ReplicaGroup([[0, 1]])
    for o in nki.run_ranks(sbuf_collective, _ranks(xs, rg, "gather_free", n)):
        assert torch.equal(o.cpu(), torch.cat(xs, 1))
    for o in nki.run_ranks(sbuf_collective, _ranks(xs, rg, "gather_partitions", n)):
        assert torch.equal(o.cpu(), torch.cat(xs, 0))
    for r, o in enumerate(nki.run_ranks(sbuf_collective, _ranks(xs, rg, "scatter", n))):
        assert torch.equal(o.cpu(), _reduce(xs, "sum")[16 * r : 16 * r + 16])


@nki.jit
def coalesced_all_reduce(a, b, rg):
    outs = []
    for x in (a, b):
        outs.append(nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm))
    srcs = [nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm) for x in (a, b)]
    for s, x in zip(srcs, (a, b)):
        nisa.dma_copy(dst=s, src=x)
    ncc.all_reduce(srcs=srcs, dsts=outs, replica_group=rg, op=nl.add)
    return outs[0], outs[1]


def test_coalesced_all_reduce_of_two_hbm_tensors():
    a = [torch.randn(8, 8) for _ in range(2)]
    b = [torch.randn(4, 16).bfloat16() for _ in range(2)]
    args = [(a[r].to("neuron"), b[r].to("neuron"), ReplicaGroup([[0, 1]])) for r in range(2)]
    for oa, ob in nki.run_ranks(coalesced_all_reduce, args):
        assert torch.equal(oa.cpu(), _reduce(a, "sum"))
        assert torch.equal(ob.cpu(), _reduce(b, "sum"))


@nki.jit
def permutes(x, rg, pairs):
    """collective_permute over explicit pairs, then an implicit ring permute, a ring
    permute-reduce of (x, x * 2) and the ring's processing rank ids of steps 0..2."""
    a = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    b = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    c = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    d = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=a, src=x)
    ncc.collective_permute(srcs=[x], dsts=[a], source_target_pairs=pairs)
    ncc.collective_permute_implicit(srcs_by_channel=[[x]], dsts_by_channel=[[b]], replica_group=rg)
    x2 = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)
    nisa.dma_copy(dst=x2, src=t)
    ncc.collective_permute_implicit_reduce(
        srcs0_by_channel=[[x], [x2]],
        srcs1_by_channel=[[x2], [x]],
        dsts_by_channel=[[c], [d]],
        replica_group=rg,
        op=nl.add,
        channel_ids=[0, 1],
    )
    ids = nl.ndarray((1, 4), dtype=nl.int32, buffer=nl.shared_hbm)
    for i in range(3):
        reg = ncc.collective_permute_implicit_current_processing_rank_id(i, replica_group=rg)
        nisa.register_store(ids[0:1, i : i + 1], reg)
    nisa.register_store(ids[0:1, 3:4], ncc.rank_id())
    return a, b, c, d, ids


@pytest.mark.parametrize("dtype", DTYPES)
def test_permutes_and_ring_rank_ids(dtype):
    n = 3
    xs = [torch.randn(8, 16).to(dtype) for _ in range(n)]
    rg = ReplicaGroup([[0, 1, 2]])
    pairs = [(0, 2), (2, 0)]  # rank 1 receives nothing: keeps its copy of x
    outs = nki.run_ranks(permutes, _ranks(xs, rg, pairs))
    for r, (a, b, c, d, ids) in enumerate(outs):
        pred = xs[(r - 1) % n]
        assert torch.equal(a.cpu(), xs[{0: 2, 1: 1, 2: 0}[r]])
        assert torch.equal(b.cpu(), pred)
        red = (pred.float() + (pred.float() * 2).to(dtype).float()).to(dtype)
        assert torch.equal(c.cpu(), red) and torch.equal(d.cpu(), red)
        assert ids.cpu().tolist() == [[r, (r - 1) % n, (r - 2) % n, r]]


@nki.jit
def variable(x, meta, rg, which):
    src = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    dst = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=src, src=x)
    zero = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.memset(dst=zero, value=0)
    nisa.dma_copy(dst=dst, src=zero)
    if which == "a2av":
        ncc.all_to_all_v(srcs=[src], dsts=[dst], replica_group=rg, metadata_tensor=meta)
    else:
        ncc.all_gather_v(srcs=[src], dsts=[dst], replica_group=rg, metadata_tensor=meta)
    return dst


def test_all_to_all_v_and_all_gather_v_move_the_counted_chunks():
    n, slot = 4, 8
    xs = [torch.arange(n * slot, dtype=torch.float32) + 100 * r for r in range(n)]
    xs = [x.reshape(n, slot) for x in xs]
    counts = [[(r + q) % 3 + 1 for q in range(n)] for r in range(n)]  # rank r -> position q
    metas = []
    for r in range(n):
        send = counts[r]
        displs = [slot * q for q in range(n)]
        metas.append(torch.tensor([send, displs, [0] * n], dtype=torch.uint32))
    rg = ReplicaGroup([list(range(n))])
    args = [(xs[r].to("neuron"), metas[r].to("neuron"), rg, "a2av") for r in range(n)]
    outs = nki.run_ranks(variable, args)
    for r, o in enumerate(outs):
        want = torch.zeros(n * slot)
        for s in range(n):
            c = counts[s][r]
            want[s * slot : s * slot + c] = xs[s].reshape(-1)[slot * r : slot * r + c]
        assert torch.equal(o.cpu().reshape(-1), want)
        # row 2: the counts received, written by the collective
        assert args[r][1].cpu()[2].tolist() == [counts[s][r] for s in range(n)]
    gmetas = [torch.tensor([[r + 1] * n, [2] * n, [0] * n], dtype=torch.uint32) for r in range(n)]
    args = [(xs[r].to("neuron"), gmetas[r].to("neuron"), rg, "agv") for r in range(n)]
    for o in nki.run_ranks(variable, args):
        want = torch.zeros(n * slot)
        for s in range(n):
            want[s * slot : s * slot + s + 1] = xs[s].reshape(-1)[2 : 2 + s + 1]
        assert torch.equal(o.cpu().reshape(-1), want)


@nki.jit
def lnc_all_reduce(x, rg):
    """LNC=2: each program all-reduces its half of the rows; program k of every rank meets
    program k of the others."""
    pid = nl.program_id(0)
    h = x.shape[0] // 2
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((h, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[pid * h : pid * h + h, :])
    ncc.all_reduce(srcs=[t], dsts=[t], replica_group=rg, op=nl.add)
    nisa.dma_copy(dst=out[pid * h : pid * h + h, :], src=t)
    return out


def test_lnc2_programs_meet_their_own_index():
    xs = [torch.randn(64, 16) for _ in range(2)]
    outs = nki.run_ranks(lnc_all_reduce[2], _ranks(xs, ReplicaGroup([[0, 1]])))
    for o in outs:
        assert torch.equal(o.cpu(), _reduce(xs, "sum"))


def test_modeled_time_is_the_collective_model_on_the_cc_cores():
    from torch_neuronx.perf import collectives as pc
    from torch_neuronx.perf import target as pt

    xs = [torch.randn(128, 256) for _ in range(4)]
    nki.run_ranks(hbm_collective, _ranks(xs, ReplicaGroup([[0, 1, 2, 3]]), "all_reduce", nl.add))
    rep = hbm_collective.last_report
    want = pc.collective_cost(
        "all_reduce", 128 * 256 * 4, [0, 1, 2, 3], pt.current(), in_graph=True
    )
    assert rep.instructions["collective"] == 1
    assert rep.modeled_busy["collective"] == pytest.approx(want.duration)
    assert rep.modeled_seconds > want.duration  # the copies around it come after / before
    # a one-rank group moves nothing
    nki.run_ranks(hbm_collective, _ranks(xs[:1], ReplicaGroup([[0]]), "all_reduce", nl.add))
    assert hbm_collective.last_report.modeled_busy.get("collective", 0.0) == 0.0


def test_a_collective_bound_kernel_is_network_bound_on_the_device_timeline():
    """While the performance model records, each rank's launch is a device event whose bound
    is the CC-Cores' time when the collective dominates."""
    import torch_neuronx

    xs = [torch.randn(128, 512) for _ in range(2)]
    with torch_neuronx.perf.measure() as m:
        nki.run_ranks(hbm_collective, _ranks(xs, ReplicaGroup([[0, 1]]), "all_reduce", nl.add))
    kernels = [e for e in m.events if e.cost.name == "nki:hbm_collective"]
    assert len(kernels) == 2 and all(e.cost.bound == "network" for e in kernels)
    assert sorted(e.device for e in kernels) == [0, 1]  # rank r's tensors on neuron:r
