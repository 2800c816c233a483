"""Compiled graphs (issue 10, point 2): a fused kernel pays HBM traffic only for what it reads
and writes, so a chain of element-wise ops costs less compiled than eager."""

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

from torch_neuronx.perf import estimate, graph, params, roofline, target
from torch_neuronx.perf import work as wk
from torch_neuronx.runtime.op_names import op_name

CORE = target.for_instance("trn2.3xlarge").core
N = 1 << 22


def _plan(fn, *shapes, dtype=torch.float32):
    gm = make_fx(fn, tracing_mode="fake")(*[torch.empty(s, dtype=dtype) for s in shapes])
    return graph.plan_graph(gm, "test")


def _chain(x):
    return ((torch.relu(x) * 2 + 1).exp() - x).sigmoid()


def test_elementwise_chain_is_one_kernel_reading_and_writing_once():
    plan = _plan(_chain, (N,))
    assert len(plan.works) == 1
    (w,) = plan.works
    assert w.bytes == 2 * 4 * N  # x read once, the result written once
    assert [wk.base_name(o) for o in w.ops] == ["relu", "mul", "add", "exp", "sub", "sigmoid"]


def test_compiling_a_chain_lowers_modeled_time():
    plan = _plan(_chain, (N,))
    compiled = plan.duration(CORE)
    gm = make_fx(_chain, tracing_mode="fake")(torch.empty(N))
    eager = 0.0
    for n in gm.graph.nodes:
        if n.op == "call_function":
            args = tuple(
                graph._concrete(a.meta["val"]) if isinstance(a, torch.fx.Node) else a
                for a in n.args
            )
            w = wk.op_work(op_name(n.target), args, None, graph._concrete(n.meta["val"]), None)
            eager += roofline.cost_of(w, CORE).duration
    # 6 HBM round trips and 6 launches become 1 and 1; the fused kernel is then bound by
    # VectorE (7 instruction passes over the data), so the gain is below 6x
    assert compiled < eager / 2
    assert plan.costs(CORE)[1].bound == "compute"


def test_matmuls_cut_fused_kernels_and_stay_acyclic():
    def f(x, w):
        h = torch.relu(x @ w)  # relu after mm: stage 1
        return (h * x.sum()) @ w.t() + 1  # x.sum() is stage 0: a separate kernel

    plan = _plan(f, (256, 256), (256, 256))
    kinds = [(w.engine, tuple(wk.base_name(o) for o in w.ops)) for w in plan.works]
    assert kinds[0] == ("tensor", ("mm",))
    tensor_kernels = [k for k in kinds if k[0] == "tensor"]
    assert len(tensor_kernels) == 2
    fused = [k[1] for k in kinds if k[0] != "tensor"]
    assert ("sum",) in fused and ("relu", "mul") in fused and ("add",) in fused


def test_views_are_free_and_slices_read_only_their_part():
    def f(x):
        return (x[:, :128] * 2).t().contiguous()

    plan = _plan(f, (1024, 1024))
    total_read_write = sum(w.bytes for w in plan.works)
    assert total_read_write == 2 * 4 * 1024 * 128  # the slice in, the transposed copy out


def test_a_graph_pays_one_launch_and_kernel_overheads():
    plan = _plan(lambda x: x + 1, (8,))
    costs = plan.costs(CORE)
    p = params.current()
    assert costs[0].kind == "graph" and costs[0].duration == p.graph_launch_s
    assert costs[1].kind == "kernel" and costs[1].overhead_s == p.kernel_overhead_s


def test_a_plan_survives_pickling_and_recosts_per_generation():
    import pickle

    plan = pickle.loads(pickle.dumps(_plan(_chain, (N,))))
    t2 = plan.duration(target.for_instance("trn2.48xlarge").core)
    t3 = plan.duration(target.for_instance("trn3.48xlarge").core)
    assert t3 < t2


def test_estimate_in_graph_matches_the_planner_for_one_op():
    plan = _plan(lambda a, b: a @ b, (512, 512), (512, 512), dtype=torch.bfloat16)
    tgt = target.for_instance("trn2.3xlarge")
    one = estimate.estimate_op("mm", [(512, 512), (512, 512)], torch.bfloat16, tgt, in_graph=True)
    assert plan.costs(tgt.core)[1].duration == pytest.approx(one.duration)


def test_functional_collectives_in_a_graph_are_costed_by_the_collective_model():
    from torch_neuronx.perf import collectives

    def f(x):
        y = torch.ops._c10d_functional.all_reduce(x * 2, "sum", "0")
        y = torch.ops._c10d_functional.wait_tensor(y)
        return y + 1

    plan = _plan(f, (1 << 20,))
    kinds = [(w.engine, w.name) for w in plan.works]
    assert kinds == [
        ("vector", "fused(mul)"),
        ("collective", "all_reduce"),
        ("vector", "fused(add)"),
    ]
    tgt = target.for_instance("trn2.3xlarge")
    cost = plan.costs(tgt.core, tgt)[2]
    # no process group "0" here: the model falls back to ranks 0..1 (two cores of one chip)
    expect = collectives.collective_cost("all_reduce", 4 << 20, [0, 1], tgt, in_graph=True)
    assert cost.duration == pytest.approx(expect.duration) and cost.kind == "collective"


def _unrolled(x):
    # a loop-unrolled graph: 50 iterations of 4 ops, one fused kernel of 200 ops; each
    # iteration normalises by a whole-tensor reduction, so the kernel cannot be tiled by rows
    for _ in range(50):
        x = torch.sin(x) * (1.0 / x.abs().sum())
    return x


def _unrolled_rows(x):  # the same chain with row-local reductions: tiled over rows, fits
    for _ in range(50):
        x = torch.sin(x) * (1.0 / x.abs().sum(-1, keepdim=True))
    return x


def test_unrolled_chain_larger_than_sbuf_pays_its_spills():
    big = int(4 * CORE.sbuf // 4)  # fp32 elements: 4 x SBUF per live tensor
    plan = _plan(_unrolled, (big // 1024, 1024))
    fused = [w for w in plan.works if len(w.ops) > 1]
    assert len(fused) == 1 and len(fused[0].ops) >= 200
    (w,) = fused
    tensor = 4.0 * big
    spill = roofline.spill_bytes(w, CORE)
    # each of the 50 iterations makes tensors of 4 x SBUF: each spills (written once, read back
    # once), never once per boundary it stays live across, and never more than the ops unfused
    assert spill >= 50 * 2 * (tensor - CORE.sbuf)
    assert spill <= w.unfused_bytes - w.bytes
    cost = plan.costs(CORE)[1 + plan.works.index(w)]
    assert cost.bytes == w.bytes + spill
    assert cost.memory_s >= roofline.memory_time(CORE, spill)
    # no longer one SBUF-resident kernel: at least 100x the HBM time of reading x + writing out
    assert cost.duration > 100 * roofline.memory_time(CORE, w.bytes)
    assert "spills" in cost.detail
    rows = _plan(_unrolled_rows, (big // 1024, 1024))
    (w,) = [w for w in rows.works if len(w.ops) > 1]
    assert max(w.live) <= CORE.sbuf and roofline.spill_bytes(w, CORE) == 0.0


def _loss_head(logits, target):  # nanoGPT's loss at full vocabulary: log-softmax + NLL + grad
    lsm = torch.log_softmax(logits.float(), -1)
    loss = torch.nn.functional.nll_loss(lsm, target)
    g = torch.autograd.grad(loss, logits)[0]
    return loss, g


def test_spilling_kernel_never_costs_more_than_its_ops_eagerly():
    """Regression (nanoGPT train.py, issue 23/25): the fused loss kernel over 12x1024x50304
    logits was charged its whole working set at every boundary (54 GB of spill, 159 ms on
    trn2 lnc1), which made the compiled step slower than the eager one. Scaled down here: the
    compiled plan of the same ops costs no more than those ops as eager launches."""
    from torch_neuronx.runtime.engines import Engine

    rows, vocab = 4096, 16384  # 256 MiB fp32 log-probabilities: 4 x SBUF
    logits = torch.empty(rows, vocab, dtype=torch.bfloat16, requires_grad=True)
    target = torch.zeros(rows, dtype=torch.long)
    gm = make_fx(_loss_head, tracing_mode="fake")(logits, target)
    plan = graph.plan_graph(gm, "loss")
    (w,) = [w for w in plan.works if "aten::nll_loss_forward" in w.ops]
    assert max(w.live) > CORE.sbuf and roofline.spill_bytes(w, CORE) > 0
    eager = 0.0
    for n in gm.graph.nodes:
        if n.op != "call_function" or graph._is_view(n.target):
            continue
        args = tuple(
            graph._concrete(a.meta["val"]) if isinstance(a, torch.fx.Node) else a for a in n.args
        )
        ew = wk.op_work(op_name(n.target), args, None, graph._concrete(n.meta["val"]), None)
        eager += roofline.cost_of(ew, CORE).duration if ew.engine != Engine.tensor else 0.0
    assert roofline.cost_of(w, CORE, in_graph=True).duration <= eager


def test_small_chain_that_fits_in_sbuf_is_unchanged():
    plan = _plan(_chain, (N,))  # 16 MiB fp32 tensors, fewer than SBUF at each boundary
    (w,) = plan.works
    assert w.live and max(w.live) <= CORE.sbuf
    assert roofline.spill_bytes(w, CORE) == 0.0
    import dataclasses

    before = roofline.cost_of(dataclasses.replace(w, live=()), CORE, in_graph=True)
    after = roofline.cost_of(w, CORE, in_graph=True)
    assert after.duration == before.duration and after.bytes == before.bytes == 2 * 4 * N
