"""Collectives of the neuron c10d backend reach the device clocks (issue 10, point 2): two real
processes, each costing its own all_reduce / all_gather with the collective model."""

import socket

from torch_neuronx.testing import child

WORKER = """
import torch, torch.distributed as dist, torch_neuronx
import torch_neuronx.perf as perf
from torch_neuronx.perf import collectives, target

dist.init_process_group("neuron")
r = dist.get_rank()
x = torch.full((1 << 16,), float(r + 1)).to("neuron")
part = torch.full((1 << 10,), float(r)).to("neuron")
out = torch.empty(2 << 10).to("neuron")
with perf.measure() as m:
    dist.all_reduce(x)
    dist.all_gather_into_tensor(out, part)
assert x.cpu()[0].item() == 3.0
assert out.cpu()[(1 << 10):].eq(1.0).all()
costs = [e.cost for e in m.events if e.cost.kind == "collective"]
assert [c.name for c in costs] == ["all_reduce", "all_gather"], [c.name for c in costs]
assert {e.device for e in m.events if e.cost.kind == "collective"} == {r}
tgt = target.current()
expect = collectives.collective_cost("all_reduce", 4 << 16, [0, 1], tgt)
assert abs(costs[0].duration - expect.duration) < 1e-15, (costs[0], expect)
assert costs[0].detail.endswith("cores of a chip x2"), costs[0].detail
assert costs[1].bytes == 4 * (2 << 10)  # the gathered output
# nothing is recorded outside the region
before = perf.totals(r)["events"]
dist.all_reduce(x)
assert perf.totals(r)["events"] == before
dist.destroy_process_group()
"""


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_collectives_are_costed_on_each_rank():
    port = str(_port())
    procs = [
        child.start(
            WORKER,
            env={
                "RANK": str(r),
                "WORLD_SIZE": "2",
                "LOCAL_RANK": str(r),
                "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": port,
                "OMP_NUM_THREADS": "1",
            },
        )
        for r in range(2)
    ]
    outs = []
    for p in procs:
        try:
            out, err = p.communicate(timeout=240)
        except Exception:
            for q in procs:
                q.kill()
            raise
        outs.append((p.returncode, err))
    for rc, err in outs:
        assert rc == 0, err[-6000:]
