"""Point 1: launched by torchrun (single node or --nnodes 2); nothing imports torch_neuronx
explicitly: the backend must be registered by autoload.

argv[1]: backend string for init_process_group.
"""

import datetime
import os
import sys

import torch
import torch.distributed as dist
from nxcommon import record, write_results
from torch.distributed.device_mesh import init_device_mesh

BACKEND = sys.argv[1]
LOCAL = int(os.environ["LOCAL_RANK"])

record("registered_at_autoload", lambda: "neuron" in dist.Backend.backend_list)
# device_id binds (and eagerly connects) the default group to this rank's core; it makes
# DeviceMesh and split_group split groups (torch 2.13 alone crashes splitting a
# cpu:gloo,neuron:neuron group; the backend mends that, see distributed/backend.py).
dist.init_process_group(
    BACKEND, timeout=datetime.timedelta(seconds=60), device_id=torch.device("neuron", LOCAL)
)
R, W = dist.get_rank(), dist.get_world_size()


def device_binding():
    assert torch.neuron.current_device() == LOCAL, (torch.neuron.current_device(), LOCAL)
    t = torch.full((3,), float(R + 1), device="neuron")
    assert t.device == torch.device("neuron", LOCAL), t.device
    dist.all_reduce(t)
    assert t.cpu().tolist() == [W * (W + 1) / 2] * 3, t
    return {
        "rank": R,
        "local_rank": LOCAL,
        "device": str(t.device),
        "device_count": torch.neuron.device_count(),
    }


record("device_is_neuron_local_rank", device_binding)


def mesh():
    m = init_device_mesh("neuron", (W,), mesh_dim_names=("dp",))
    assert m.device_type == "neuron"
    g = m.get_group("dp")
    t = torch.arange(4.0, device="neuron") + R
    out = torch.empty(4 * W, device="neuron")
    dist.all_gather_into_tensor(out, t, group=g)
    exp = torch.cat([torch.arange(4.0) + r for r in range(W)])
    assert torch.equal(out.cpu(), exp), out
    if W % 2 == 0:
        m2 = init_device_mesh("neuron", (2, W // 2), mesh_dim_names=("dp", "tp"))
        t2 = torch.ones(2, device="neuron")
        dist.all_reduce(t2, group=m2.get_group("tp"))
        assert t2.cpu().tolist() == [W // 2] * 2
    return str(m)


record("init_device_mesh", mesh)


def split():
    halves = [list(range(W // 2)), list(range(W // 2, W))]
    sg = dist.split_group(split_ranks=halves)
    mine = halves[0] if R in halves[0] else halves[1]
    assert dist.get_world_size(sg) == len(mine)
    t = torch.full((2,), float(R), device="neuron")
    dist.all_reduce(t, group=sg)
    c = torch.full((2,), float(R))
    dist.all_reduce(c, group=sg)  # CPU tensors on the split group too
    exp = float(sum(mine))
    assert t.cpu().tolist() == [exp] * 2 and c.tolist() == [exp] * 2, (t, c)
    return mine


record("split_group", split)
dist.barrier()
write_results({"backend": dist.get_backend(), "world_size": W})
dist.destroy_process_group()
