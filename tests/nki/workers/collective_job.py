"""One rank of a torch.distributed job (env:// variables set by the test) that calls an NKI
collective kernel, as a torchrun script would on hardware. Writes its results as JSON."""

import json
import os
import sys

import torch
import torch.distributed as dist

import torch_neuronx.nki.collectives as ncc
import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
from torch_neuronx import nki


@nki.jit
def reduce_and_gather(x, rg, bad=False):
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    if bad:  # a rule broken on one rank only: mixed SBUF / HBM
        ncc.all_reduce(srcs=[t], dsts=[x], replica_group=rg, op=nl.add)
    ncc.all_reduce(srcs=[t], dsts=[t], replica_group=rg, op=nl.add)
    g = nl.ndarray((x.shape[0] * 2, x.shape[1]), dtype=x.dtype, buffer=nl.shared_hbm)
    src = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=src, src=t)
    ncc.all_gather(srcs=[src], dsts=[g], replica_group=rg, collective_dim=0)
    ids = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.shared_hbm)
    nisa.register_store(ids, ncc.rank_id())
    return g, ids


def main():
    dist.init_process_group("neuron")
    rank = dist.get_rank()
    rg = ncc.ReplicaGroup([[0, 1]])
    torch.manual_seed(rank)
    out = {}
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.randn(16, 8).to(dtype)
        g, ids = reduce_and_gather(x.to("neuron"), rg)
        xs = [torch.empty_like(x) for _ in range(2)]
        dist.all_gather(xs, x.to("neuron"))  # the reference: the inputs of both ranks
        xs = [t.cpu() for t in xs]
        s = (xs[0].float() + xs[1].float()).to(dtype)
        out[str(dtype)] = {
            "equal": torch.equal(g.cpu(), torch.cat([s, s])),
            "rank_id": int(ids.cpu().item()),
        }
    try:
        reduce_and_gather(torch.zeros(4, 4).to("neuron"), rg, bad=(rank == 1))
        out["error"] = None
    except Exception as e:  # noqa: BLE001 - reported to the test
        out["error"] = f"{type(e).__name__}: {e}"
    with open(os.path.join(sys.argv[1], f"rank{rank}.json"), "w") as f:
        json.dump(out, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
