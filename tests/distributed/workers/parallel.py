"""Point 3: parallelism APIs on 2 ranks vs a single-process run of the same model and data.

Each scenario trains a tiny MLP for a few SGD steps on neuron tensors and compares the
losses and final parameters (within 1e-5) with a single-process CPU run.
argv[1:]: scenario names to run (default: all).
"""

import copy
import datetime
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from nxcommon import close, record, write_results

dist.init_process_group("neuron", timeout=datetime.timedelta(seconds=60))
R, W = dist.get_rank(), dist.get_world_size()
LOCAL = int(os.environ["LOCAL_RANK"])
DEV = torch.device("neuron", LOCAL)
OUT = os.environ["NX_TEST_OUT"]
STEPS, LR, TOL = 3, 0.1, 1e-5
torch.use_deterministic_algorithms(False)


class MLP(nn.Module):
    def __init__(self, norm=False):
        super().__init__()
        self.norm = nn.LayerNorm(8) if norm else nn.Identity()
        self.w1 = nn.Linear(8, 16)
        self.w2 = nn.Linear(16, 8)

    def forward(self, x):
        return self.w2(torch.relu(self.w1(self.norm(x))))


def make_model(seed=0, norm=False):
    torch.manual_seed(seed)
    return MLP(norm)


def batch(shape=(8, 8)):
    g = torch.Generator().manual_seed(123)
    return torch.randn(*shape, generator=g), torch.randn(*shape, generator=g)


def train_reference(model, X, Y):
    """Single-process CPU run: full batch, mean-squared error, SGD."""
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = F.mse_loss(model(X), Y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def compare_params(dist_named, ref_model, what):
    ref = dict(ref_model.named_parameters())
    worst = 0.0
    n = 0
    for name, p in dist_named:
        name = name.replace("module.", "").replace("_fsdp_wrapped_module.", "")
        full = p.full_tensor() if hasattr(p, "full_tensor") else p
        worst = max(worst, close(full, ref[name], f"{what} param {name}", TOL))
        n += 1
    assert n == len(ref), f"{what}: compared {n} of {len(ref)} parameters"
    return worst


def compare_losses(got, exp, what):
    assert len(got) == len(exp)
    for i, (g, e) in enumerate(zip(got, exp, strict=True)):
        assert abs(g - e) <= TOL, f"{what}: step {i} loss {g} vs {e}"


def global_mean(x: torch.Tensor) -> float:
    t = x.detach().reshape(1).clone()
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    return t.item()


def train_data_parallel(model, X, Y):
    """This rank's shard of the batch on its core, mean-squared error, SGD; returns the
    global mean loss of each step (comparable with ``train_reference``)."""
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    x, y = X.chunk(W)[R].to(DEV), Y.chunk(W)[R].to(DEV)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(global_mean(loss))
    return losses


# ---------------------------------------------------------------------------------------
def s_ddp(comm_hook=False):
    from torch.nn.parallel import DistributedDataParallel as DDP

    X, Y = batch()
    ref = make_model()
    ref_losses = train_reference(ref, X, Y)
    if comm_hook:  # Python comm hook (future chaining) + gradients as bucket views
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

        model = DDP(make_model().to(DEV), gradient_as_bucket_view=True, bucket_cap_mb=0.0001)
        model.register_comm_hook(None, default_hooks.allreduce_hook)
    else:
        model = DDP(make_model().to(DEV))
    losses = train_data_parallel(model, X, Y)
    for p in model.parameters():
        assert p.device == DEV and p.grad.device == DEV
    compare_losses(losses, ref_losses, "ddp")
    return compare_params(model.named_parameters(), ref, "ddp")


def _fsdp_model(mp=None, seed=0):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh("neuron", (W,))
    model = make_model(seed).to(DEV)
    kw = {"mesh": mesh}
    if mp is not None:
        kw["mp_policy"] = mp
    fully_shard(model.w1, **kw)
    fully_shard(model.w2, **kw)
    fully_shard(model, **kw)
    return model


FSDP_MODEL = {}


def s_fsdp2():
    X, Y = batch()
    ref = make_model()
    ref_losses = train_reference(ref, X, Y)
    model = _fsdp_model()
    for p in model.parameters():
        assert type(p).__name__ == "DTensor" and p.to_local().device == DEV
        assert p.to_local().shape[0] == p.shape[0] // W, "parameters must be sharded"
    losses = train_data_parallel(model, X, Y)
    compare_losses(losses, ref_losses, "fsdp2")
    FSDP_MODEL["model"] = model
    return compare_params(model.named_parameters(), ref, "fsdp2")


def s_fsdp2_mixed_precision():
    from torch.distributed.fsdp import MixedPrecisionPolicy

    X, Y = batch()
    # reference: fp32 master weights; each rank's half batch runs forward/backward in bf16;
    # bf16 grads are cast to fp32 and averaged over ranks, then SGD on fp32 weights.
    ref = make_model()
    ref_losses = []
    for _ in range(STEPS):
        grads, step_losses = [], []
        for r in range(W):
            low = copy.deepcopy(ref).to(torch.bfloat16)
            out = low(X.chunk(W)[r].to(torch.bfloat16))
            loss = F.mse_loss(out.float(), Y.chunk(W)[r])
            loss.backward()
            grads.append([p.grad.float() for p in low.parameters()])
            step_losses.append(loss.item())
        with torch.no_grad():
            for i, p in enumerate(ref.parameters()):
                g = sum(gr[i] for gr in grads) / W
                p.add_(g, alpha=-LR)
        ref_losses.append(sum(step_losses) / W)
    model = _fsdp_model(
        MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    )
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    x, y = X.chunk(W)[R].to(DEV), Y.chunk(W)[R].to(DEV)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        out = model(x)
        assert out.dtype == torch.bfloat16
        loss = F.mse_loss(out.float(), y)
        loss.backward()
        opt.step()
        losses.append(global_mean(loss))
    for p in model.parameters():
        assert p.dtype == torch.float32  # sharded master weights stay fp32
    compare_losses(losses, ref_losses, "fsdp2-mp")
    return compare_params(model.named_parameters(), ref, "fsdp2-mp")


def s_dcp():
    import torch.distributed.checkpoint as dcp

    model = FSDP_MODEL.get("model") or _fsdp_model()
    ckpt = os.path.join(OUT, "dcp_ckpt")
    dcp.save(model.state_dict(), checkpoint_id=ckpt)
    saved = {k: v.full_tensor().cpu() for k, v in model.state_dict().items()}
    # every rank wrote its own shard file
    files = sorted(f for f in os.listdir(ckpt) if f.endswith(".distcp"))
    assert len(files) == W, f"expected one shard file per rank, got {files}"
    fresh = _fsdp_model(seed=7)
    before = {k: v.full_tensor().cpu() for k, v in fresh.state_dict().items()}
    assert any(not torch.equal(before[k], saved[k]) for k in saved), "fresh model must differ"
    sd = fresh.state_dict()
    dcp.load(sd, checkpoint_id=ckpt)
    fresh.load_state_dict(sd)
    for k, v in fresh.state_dict().items():
        assert type(v).__name__ == "DTensor" and v.to_local().device == DEV
        assert torch.equal(v.full_tensor().cpu(), saved[k]), k
    return {"files": files, "keys": sorted(saved)}


def _tp_train(norm, plan_fn, shard_seq):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import parallelize_module

    S = 4
    X, Y = batch((2, S, 8))
    ref = make_model(norm=norm)
    ref_losses = train_reference(ref, X, Y)
    mesh = init_device_mesh("neuron", (W,))
    model = parallelize_module(make_model(norm=norm).to(DEV), mesh, plan_fn())
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    if shard_seq:
        x, y = X.chunk(W, dim=1)[R].to(DEV), Y.chunk(W, dim=1)[R].to(DEV)
    else:
        x, y = X.to(DEV), Y.to(DEV)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        out = model(x)
        if shard_seq:
            loss = F.mse_loss(out, y) / W  # sum over ranks = full-sequence mean
            t = loss.detach().reshape(1).clone()
            dist.all_reduce(t)
            losses.append(t.item())
        else:
            loss = F.mse_loss(out, y)
            losses.append(loss.item())
        loss.backward()
        opt.step()
    compare_losses(losses, ref_losses, "tp")
    return compare_params(model.named_parameters(), ref, "tp")


def s_tensor_parallel():
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel

    return _tp_train(False, lambda: {"w1": ColwiseParallel(), "w2": RowwiseParallel()}, False)


def s_sequence_parallel():
    from torch.distributed.tensor import Shard
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, SequenceParallel

    return _tp_train(
        True,
        lambda: {
            "norm": SequenceParallel(),
            "w1": ColwiseParallel(input_layouts=Shard(1)),
            "w2": RowwiseParallel(output_layouts=Shard(1)),
        },
        True,
    )


def s_pipeline():
    from torch.distributed.pipelining import PipelineStage, ScheduleGPipe

    assert W == 2
    X, Y = batch()
    ref = make_model()
    ref_losses = train_reference(ref, X, Y)
    full = make_model()
    sub = nn.Sequential(full.w1, nn.ReLU()) if R == 0 else nn.Sequential(full.w2)
    sub = sub.to(DEV)
    stage = PipelineStage(sub, stage_index=R, num_stages=2, device=DEV)
    sched = ScheduleGPipe(stage, n_microbatches=2, loss_fn=F.mse_loss)
    opt = torch.optim.SGD(sub.parameters(), lr=LR)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        if R == 0:
            sched.step(X.to(DEV))
            t = torch.zeros(1, device=DEV)
        else:
            mb = []
            sched.step(target=Y.to(DEV), losses=mb)
            t = (sum(mb) / len(mb)).detach().reshape(1)
        dist.broadcast(t, src=1)
        losses.append(t.item())
        opt.step()
    compare_losses(losses, ref_losses, "pipeline")
    prefix = "w1" if R == 0 else "w2"
    refsub = getattr(ref, prefix)
    mine = sub[0]
    worst = 0.0
    for n in ("weight", "bias"):
        worst = max(worst, close(getattr(mine, n), getattr(refsub, n), f"pp {prefix}.{n}", TOL))
    return worst


def s_funcol_eager():
    import torch.distributed._functional_collectives as funcol

    xs = [torch.arange(8.0) * (r + 1) + r for r in range(W)]
    x = xs[R].to(DEV)
    g = dist.group.WORLD
    ar = funcol.all_reduce(x, "sum", g)
    ag = funcol.all_gather_tensor(x, 0, g)
    rs = funcol.reduce_scatter_tensor(x, "sum", 0, g)
    a2a = funcol.all_to_all_single(x, None, None, g)
    res = [t.wait() if hasattr(t, "wait") else t for t in (ar, ag, rs, a2a)]
    for t in res:
        assert t.device == DEV, t.device
    total = sum(xs)
    close(res[0], total, "funcol all_reduce", 0)
    close(res[1], torch.cat(xs), "funcol all_gather", 0)
    close(res[2], total.chunk(W)[R], "funcol reduce_scatter", 0)
    close(res[3], torch.cat([xx.chunk(W)[R] for xx in xs]), "funcol all_to_all", 0)
    return True


def s_funcol_compiled():
    import torch.distributed._functional_collectives as funcol

    g = dist.group.WORLD

    def fn(x, w):
        h = torch.relu(x @ w)
        h = funcol.all_reduce(h, "sum", g)
        ag = funcol.all_gather_tensor(h * 2, 0, g)
        rs = funcol.reduce_scatter_tensor(ag, "sum", 0, g)
        return h.sum(0) + 1, rs

    torch.manual_seed(0)
    x = (torch.randn(4, 8) + R).to(DEV)
    w = torch.randn(8, 8).to(DEV)
    eager = fn(x, w)
    eager = [t.wait() if hasattr(t, "wait") else t for t in eager]
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="neuron", fullgraph=True)
    got = compiled(x, w)
    got = [t.wait() if hasattr(t, "wait") else t for t in got]
    for a, b in zip(got, eager, strict=True):
        assert a.device == DEV, a.device
        close(a, b, "compiled funcol", TOL)
    return True


SCENARIOS = {
    "ddp": s_ddp,
    "ddp_comm_hook": lambda: s_ddp(comm_hook=True),
    "fsdp2": s_fsdp2,
    "fsdp2_mixed_precision": s_fsdp2_mixed_precision,
    "dcp_fsdp2": s_dcp,
    "tensor_parallel": s_tensor_parallel,
    "sequence_parallel": s_sequence_parallel,
    "pipeline_2_stages": s_pipeline,
    "funcol_eager": s_funcol_eager,
    "funcol_compiled": s_funcol_compiled,
}

for name in sys.argv[1:] or SCENARIOS:
    record(name, SCENARIOS[name])
    dist.barrier()  # keep ranks in step even when a scenario failed on one side

write_results()
dist.destroy_process_group()
