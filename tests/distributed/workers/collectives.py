"""Every collective and p2p op on neuron tensors vs the same op on CPU tensors over gloo.

argv[1]: the init_process_group backend string ("neuron" or "cpu:gloo,neuron:neuron").
Each check runs twice (sync and async_op=True) and compares bitwise with a pure-gloo
CPU group; results go to $NX_TEST_OUT/rank<r>.json.
"""

import datetime
import os
import sys

import torch
import torch.distributed as dist
from nxcommon import record, same, write_results

BACKEND = sys.argv[1]
LOCAL = int(os.environ["LOCAL_RANK"])
NEURON = torch.device("neuron", LOCAL)
dist.init_process_group(BACKEND, timeout=datetime.timedelta(seconds=60))
R = dist.get_rank()
W = dist.get_world_size()
REF = dist.new_group(backend="gloo")  # plain gloo on CPU tensors: the reference


def data(n=6, dtype=torch.float32, salt=0):
    g = torch.Generator().manual_seed(1000 * R + salt)
    if dtype.is_floating_point:
        return (torch.randn(n, generator=g) * 3).to(dtype)
    if dtype == torch.bool:
        return torch.randint(0, 2, (n,), generator=g).bool()
    return torch.randint(-50, 50, (n,), generator=g).to(dtype)


def wait(w, async_op):
    if async_op:
        assert w is not None, "async_op=True must return a Work"
        w.wait()
    else:
        assert w is None


# each scenario: f(dev, group, async_op) -> list of tensors to compare
def s_all_reduce(op, dtype=torch.float32):
    def f(dev, group, a):
        t = data(8, dtype).to(dev)
        if op == "premul":
            # gloo has no PREMUL_SUM: the CPU reference is SUM over pre-scaled inputs
            if dev.type == "cpu":
                t.mul_(0.25)
                wait(dist.all_reduce(t, dist.ReduceOp.SUM, group=group, async_op=a), a)
            else:
                wait(
                    dist.all_reduce(t, dist._make_nccl_premul_sum(0.25), group=group, async_op=a), a
                )
        else:
            wait(dist.all_reduce(t, op, group=group, async_op=a), a)
        return [t]

    return f


def s_all_gather(dev, group, a):
    out = [torch.empty(5, device=dev) for _ in range(W)]
    wait(dist.all_gather(out, data(5).to(dev), group=group, async_op=a), a)
    return out


def s_all_gather_into_tensor(dev, group, a):
    out = torch.empty(W * 4, device=dev)
    wait(dist.all_gather_into_tensor(out, data(4).to(dev), group=group, async_op=a), a)
    return [out]


def s_reduce_scatter(dev, group, a):
    out = torch.empty(3, device=dev)
    ins = [data(3, salt=i).to(dev) for i in range(W)]
    wait(dist.reduce_scatter(out, ins, group=group, async_op=a), a)
    return [out] + ins


def s_reduce_scatter_premul(dev, group, a):
    out = torch.empty(3, device=dev)
    ins = [data(3, salt=i).to(dev) for i in range(W)]
    if dev.type == "cpu":
        w = dist.reduce_scatter(out, [i * 0.5 for i in ins], group=group, async_op=a)
    else:
        w = dist.reduce_scatter(
            out, ins, op=dist._make_nccl_premul_sum(0.5), group=group, async_op=a
        )
    wait(w, a)
    return [out] + ins  # the inputs must be left untouched


def s_reduce_scatter_tensor(dev, group, a):
    out = torch.empty(3, device=dev)
    inp = data(3 * W).to(dev)
    wait(dist.reduce_scatter_tensor(out, inp, op=dist.ReduceOp.MAX, group=group, async_op=a), a)
    return [out, inp]


def s_reduce_scatter_tensor_premul(dev, group, a):
    out = torch.empty(3, device=dev)
    inp = data(3 * W).to(dev)
    if dev.type == "cpu":
        w = dist.reduce_scatter_tensor(out, inp * 0.5, group=group, async_op=a)
    else:
        w = dist.reduce_scatter_tensor(
            out, inp, op=dist._make_nccl_premul_sum(0.5), group=group, async_op=a
        )
    wait(w, a)
    return [out, inp]  # the input must be left untouched


def s_premul_tensor_factor(kind):
    """PREMUL_SUM whose factor is a 0-d device tensor (what FSDP2 builds), for all_reduce
    and reduce_scatter_tensor; the CPU reference is SUM over inputs scaled on the host."""

    def f(dev, group, a):
        inp = data(3 * W).to(dev)
        factor = torch.tensor(0.125, device=dev)
        if kind == "all_reduce":
            if dev.type == "cpu":
                inp.mul_(0.125)
                w = dist.all_reduce(inp, group=group, async_op=a)
            else:
                w = dist.all_reduce(
                    inp, dist._make_nccl_premul_sum(factor), group=group, async_op=a
                )
            wait(w, a)
            return [inp]
        out = torch.empty(3, device=dev)
        if dev.type == "cpu":
            w = dist.reduce_scatter_tensor(out, inp * 0.125, group=group, async_op=a)
        else:
            w = dist.reduce_scatter_tensor(
                out, inp, op=dist._make_nccl_premul_sum(factor), group=group, async_op=a
            )
        wait(w, a)
        return [out, inp, factor]

    return f


def s_broadcast(dev, group, a):
    t = data(7, torch.float64).to(dev)
    wait(dist.broadcast(t, src=W - 1, group=group, async_op=a), a)
    return [t]


def s_reduce(dev, group, a):
    t = data(5).to(dev)
    wait(dist.reduce(t, dst=0, op=dist.ReduceOp.SUM, group=group, async_op=a), a)
    return [t] if R == 0 else []


def s_reduce_premul(dev, group, a):
    t = data(5).to(dev)
    if dev.type == "cpu":
        t.mul_(0.25)
        w = dist.reduce(t, dst=0, op=dist.ReduceOp.SUM, group=group, async_op=a)
    else:
        w = dist.reduce(t, dst=0, op=dist._make_nccl_premul_sum(0.25), group=group, async_op=a)
    wait(w, a)
    return [t] if R == 0 else []


def s_gather(dev, group, a):
    dst = W - 1
    out = [torch.empty(4, device=dev) for _ in range(W)] if R == dst else None
    wait(dist.gather(data(4).to(dev), out, dst=dst, group=group, async_op=a), a)
    return out or []


def s_scatter(dev, group, a):
    out = torch.empty(4, device=dev)
    ins = [data(4, salt=i).to(dev) for i in range(W)] if R == 0 else None
    wait(dist.scatter(out, ins, src=0, group=group, async_op=a), a)
    return [out]


def s_all_to_all(dev, group, a):
    ins = [data(3, salt=i).to(dev) for i in range(W)]
    outs = [torch.empty(3, device=dev) for _ in range(W)]
    wait(dist.all_to_all(outs, ins, group=group, async_op=a), a)
    return outs


def s_all_to_all_single_uneven(dev, group, a):
    # rank r sends (r + j + 1) elements to rank j
    in_splits = [R + j + 1 for j in range(W)]
    out_splits = [j + R + 1 for j in range(W)]
    inp = data(sum(in_splits)).to(dev)
    out = torch.empty(sum(out_splits), device=dev)
    wait(dist.all_to_all_single(out, inp, out_splits, in_splits, group=group, async_op=a), a)
    return [out]


def s_all_to_all_single_even(dev, group, a):
    inp = data(4 * W, torch.int32).to(dev)
    out = torch.empty_like(inp)
    wait(dist.all_to_all_single(out, inp, group=group, async_op=a), a)
    return [out]


def s_barrier(dev, group, a):
    wait(dist.barrier(group=group, async_op=a), a)
    return []


def s_coalesced(dev, group, a):
    ag_out = torch.empty(W * 3, device=dev)
    rs_out = torch.empty(2, device=dev)
    ag_in, rs_in = data(3).to(dev), data(2 * W, salt=5).to(dev)
    ag_out2 = torch.empty(W * 2, device=dev)
    with dist._coalescing_manager(group=group, async_ops=a) as cm:
        dist.all_gather_into_tensor(ag_out, ag_in, group=group)
        dist.all_gather_into_tensor(ag_out2, rs_in[:2], group=group)
    if a:
        cm.wait()
    rs_out2 = torch.empty(1, device=dev)
    with dist._coalescing_manager(group=group, async_ops=a) as cm1:
        dist.reduce_scatter_tensor(rs_out, rs_in, group=group)
        dist.reduce_scatter_tensor(rs_out2, ag_in[:W], op=dist.ReduceOp.MAX, group=group)
    if a:
        cm1.wait()
    ar = [data(3, salt=7).to(dev), data(2, salt=8).to(dev)]
    with dist._coalescing_manager(group=group, async_ops=a) as cm2:
        for t in ar:
            dist.all_reduce(t, group=group)
    if a:
        cm2.wait()
    return [ag_out, ag_out2, rs_out, rs_out2] + ar


def s_all_reduce_coalesced(premul=False):
    def f(dev, group, a):
        ts = [data(3, salt=1).to(dev), data(5, salt=2).to(dev)]
        op = dist.ReduceOp.SUM
        if premul and dev.type == "cpu":
            for t in ts:
                t.mul_(0.25)
        elif premul:
            op = dist._make_nccl_premul_sum(0.25)
        wait(dist.all_reduce_coalesced(ts, op, group=group, async_op=a), a)
        return ts

    return f


def s_p2p(dev, group, a):
    peer = (R + 1) % W
    prev = (R - 1) % W
    send_t = data(6).to(dev)
    recv_t = torch.empty(6, device=dev)
    if a:
        ws = [dist.isend(send_t, dst=peer, group=group), dist.irecv(recv_t, src=prev, group=group)]
        for w in ws:
            w.wait()
    else:
        if R % 2 == 0:
            dist.send(send_t, dst=peer, group=group)
            dist.recv(recv_t, src=prev, group=group)
        else:
            dist.recv(recv_t, src=prev, group=group)
            dist.send(send_t, dst=peer, group=group)
    return [recv_t]


def s_batch_isend_irecv(dev, group, a):
    peer = (R + 1) % W
    prev = (R - 1) % W
    send_a, send_b = data(4).to(dev), data(3, torch.int64).to(dev)
    recv_a, recv_b = torch.empty(4, device=dev), torch.empty(3, dtype=torch.int64, device=dev)
    ops = [
        dist.P2POp(dist.isend, send_a, peer, group),
        dist.P2POp(dist.irecv, recv_a, prev, group),
        dist.P2POp(dist.isend, send_b, peer, group),
        dist.P2POp(dist.irecv, recv_b, prev, group),
    ]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    return [recv_a, recv_b]


SCENARIOS = {
    **{
        f"all_reduce_{n}": s_all_reduce(op)
        for n, op in [
            ("sum", dist.ReduceOp.SUM),
            ("product", dist.ReduceOp.PRODUCT),
            ("min", dist.ReduceOp.MIN),
            ("max", dist.ReduceOp.MAX),
            ("avg", dist.ReduceOp.AVG),
            ("premul_sum", "premul"),
        ]
    },
    "all_reduce_sum_bf16": s_all_reduce(dist.ReduceOp.SUM, torch.bfloat16),
    "all_reduce_sum_fp16": s_all_reduce(dist.ReduceOp.SUM, torch.float16),
    "all_reduce_sum_int64": s_all_reduce(dist.ReduceOp.SUM, torch.int64),
    "all_reduce_max_int32": s_all_reduce(dist.ReduceOp.MAX, torch.int32),
    "all_reduce_avg_bf16": s_all_reduce(dist.ReduceOp.AVG, torch.bfloat16),
    "all_reduce_band_int64": s_all_reduce(dist.ReduceOp.BAND, torch.int64),
    "all_reduce_bxor_int32": s_all_reduce(dist.ReduceOp.BXOR, torch.int32),
    "all_gather": s_all_gather,
    "all_gather_into_tensor": s_all_gather_into_tensor,
    "reduce_scatter": s_reduce_scatter,
    "reduce_scatter_premul_sum": s_reduce_scatter_premul,
    "reduce_scatter_tensor": s_reduce_scatter_tensor,
    "reduce_scatter_tensor_premul_sum": s_reduce_scatter_tensor_premul,
    "all_reduce_premul_sum_tensor_factor": s_premul_tensor_factor("all_reduce"),
    "reduce_scatter_tensor_premul_sum_tensor_factor": s_premul_tensor_factor("reduce_scatter"),
    "broadcast": s_broadcast,
    "reduce": s_reduce,
    "reduce_premul_sum": s_reduce_premul,
    "gather": s_gather,
    "scatter": s_scatter,
    "all_to_all": s_all_to_all,
    "all_to_all_single_uneven": s_all_to_all_single_uneven,
    "all_to_all_single_even": s_all_to_all_single_even,
    "barrier": s_barrier,
    "coalesced": s_coalesced,
    "all_reduce_coalesced": s_all_reduce_coalesced(),
    "all_reduce_coalesced_premul_sum": s_all_reduce_coalesced(premul=True),
    "send_recv": s_p2p,
    "batch_isend_irecv": s_batch_isend_irecv,
}


def compare(fn, group, ref_group, a):
    got = fn(NEURON, group, a)
    for t in got:
        assert t.device.type == "neuron", f"result on {t.device}"
    exp = fn(torch.device("cpu"), ref_group, a)
    assert len(got) == len(exp)
    for i, (g, e) in enumerate(zip(got, exp, strict=True)):
        same(g, e, f"tensor {i}")
    return len(got)


# every c10d op torch dispatches by device (monitored_barrier_ always runs on the CPU backend)
C10D_OPS = (
    "allreduce_",
    "allreduce_coalesced_",
    "reduce_",
    "reduce_scatter_",
    "_reduce_scatter_base_",
    "reduce_scatter_tensor_coalesced_",
    "allgather_",
    "_allgather_base_",
    "allgather_coalesced_",
    "allgather_into_tensor_coalesced_",
    "broadcast_",
    "gather_",
    "scatter_",
    "alltoall_",
    "alltoall_base_",
    "barrier",
    "send",
    "recv_",
    "recv_any_source_",
)


def check_c10d_kernels():
    """Every c10d op's neuron kernel is the driver's C++ one (read from the dispatcher's own
    registration table): one implementation per collective."""
    for op in C10D_OPS:
        line = next(
            entry
            for entry in torch._C._dispatch_dump(f"c10d::{op}").splitlines()
            if entry.startswith("PrivateUse1:")
        )
        assert "csrc/distributed/collectives.cpp" in line, f"c10d::{op} PrivateUse1 kernel: {line}"
    return len(C10D_OPS)


record("c10d_kernels_in_driver", check_c10d_kernels)

for name, fn in SCENARIOS.items():
    for a in (False, True):
        record(f"{name}[{'async' if a else 'sync'}]", compare, fn, None, REF, a)

# ---- subgroups: new_group (incl. single-rank groups) and split_group
sub_all = dist.new_group(ranks=list(range(W)))
ref_sub = dist.new_group(ranks=list(range(W)), backend="gloo")
for name in (
    "all_reduce_sum",
    "all_gather_into_tensor",
    "reduce_scatter_tensor",
    "broadcast",
    "all_to_all_single_uneven",
    "barrier",
    "send_recv",
):
    record(f"new_group:{name}", compare, SCENARIOS[name], sub_all, ref_sub, True)

singles = [dist.new_group(ranks=[r]) for r in range(W)]
ref_singles = [dist.new_group(ranks=[r], backend="gloo") for r in range(W)]
mine, ref_mine = singles[R], ref_singles[R]
for name in ("all_reduce_max", "barrier", "all_gather"):

    def single(fn=SCENARIOS[name]):
        global W
        saved, W = W, 1
        try:
            return compare(fn, mine, ref_mine, True)
        finally:
            W = saved

    record(f"single_rank_group:{name}", single)


def check_split():
    # split_group needs a default group bound to this rank's core, which
    # init_process_group(device_id=NEURON) does; bound late here because torch cannot
    # create gloo-only groups (our CPU references) under a neuron-bound default group.
    dist.group.WORLD.bound_device_id = NEURON
    sg = dist.split_group(split_ranks=[list(range(W))])
    assert sg is not None
    assert dist.get_backend(sg) == dist.get_backend(), (dist.get_backend(sg), dist.get_backend())
    assert {d.type for d in sg._device_types} == {"cpu", "neuron"}, sg._device_types
    c = torch.ones(3)
    dist.all_reduce(c, group=sg)  # CPU tensors keep working on the split group
    assert c.tolist() == [float(W)] * 3
    return compare(SCENARIOS["all_reduce_sum"], sg, REF, False) + compare(
        SCENARIOS["all_gather_into_tensor"], sg, REF, True
    )


def check_split_partial():
    # ranks outside every split get None; the members' group works for both tensor kinds
    sg = dist.split_group(split_ranks=[[0]])
    if R != 0:
        assert sg is None, sg
        return "not a member"
    assert sg is not None and sg.size() == 1
    c = torch.ones(2)
    dist.all_reduce(c, group=sg)
    n = torch.ones(2, device=NEURON)
    dist.all_reduce(n, group=sg)
    assert c.tolist() == [1.0, 1.0] and n.cpu().tolist() == [1.0, 1.0]
    return True


# with "cpu:gloo,neuron:neuron" torch 2.13 alone would crash (no default backend) or hang
record("split_group", check_split)
record("split_group_partial", check_split_partial)


def check_future_value():
    # zero-copy: the work's future yields gloo's view of the very same device bytes
    t = data(4).to(NEURON)
    w = dist.all_reduce(t, async_op=True)
    v = w.get_future().wait()
    assert isinstance(v, list) and len(v) == 1, v
    assert v[0].data_ptr() == t.data_ptr(), "gloo must have reduced the device memory in place"
    same(v[0], t, "future value")
    return True


record("work_future_shares_device_memory", check_future_value)


def check_device_binding():
    assert torch.neuron.current_device() == LOCAL, (torch.neuron.current_device(), LOCAL)
    return dist.get_backend()


record("device_is_local_rank", check_device_binding)

write_results({"backend": dist.get_backend()})
dist.barrier()
dist.destroy_process_group()
