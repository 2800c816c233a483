"""Tearing a neuron group down while a gloo worker finishes a collective issued in backward.

The shape of the deadlock that hung DDP scripts at exit (docs/distributed.md, "Known issues"),
made deterministic: on rank 0 a backward hook issues an async all_reduce on the group, so gloo's
work snapshots the hook thread's state -- during backward, the contextvars context the autograd
engine stashes in thread-local state (torch/autograd/graph.py ``_engine_run_backward``). Rank 1
joins that collective only PEER_DELAY_S after rank 0 (through the store) says it is freeing the
DDP model, so the work is still in flight then: the Reducer drops the last reference to the
group with the GIL held, and ~ProcessGroupGloo waits for the work and joins the worker. When the
work held the last reference to the stashed context, the worker's decref waited for the GIL: a
hang (the launch times out). The neuron kernels hand gloo no such Python objects
(csrc/distributed/collectives.cpp: WorkWithoutPythonTLS), so teardown returns once rank 1 joins.

Scenarios: a split_group child and a new_group child of the default group. Their neuron gloo
backends come from the same creator, and are served by the same kernels, as the default
group's. The default group itself cannot be torn down this way: torch 2.13 keeps references to
it after destroy_process_group() (the Reducer is not its last holder), so it goes at exit.
Then many_groups: groups created, used from backward and destroyed in a loop leave no threads
or sockets behind.
argv[1]: the init_process_group backend ("neuron" or "cpu:gloo,neuron:neuron").
"""

import contextvars
import gc
import os
import sys
import time

import torch
import torch.distributed as dist
from nxcommon import rank, record, write_results

BACKEND = sys.argv[1]
R = rank()
DEV = torch.device("neuron", R)
PEER_DELAY_S = 0.3
SEEN = contextvars.ContextVar("seen", default="unset")

dist.init_process_group(BACKEND, device_id=DEV)
STORE = dist.distributed_c10d._get_default_store()  # the ranks' handshake in each scenario


def in_flight_teardown(name, group, destroy):
    model = torch.nn.parallel.DistributedDataParallel(
        torch.nn.Linear(4, 4).to(DEV), process_group=group
    )
    buf = torch.ones(4, device=DEV)
    works, seen, held = [], {}, [group]
    del group

    def hook(grad):
        # what a backward hook observes stays as PyTorch has it, across a collective
        seen["before"] = (SEEN.get(), torch._C._is_key_in_tls("context"))
        if R == 1:  # join once rank 0 is tearing the group down
            STORE.wait([f"teardown/{name}"])
            time.sleep(PEER_DELAY_S)
        works.append(dist.all_reduce(buf, group=held[0], async_op=True))
        seen["after"] = (SEEN.get(), torch._C._is_key_in_tls("context"))
        return grad

    x = torch.ones(4, device=DEV, requires_grad=True)
    y = x * 2
    y.register_hook(hook)
    SEEN.set("caller")
    y.sum().backward()
    assert torch.equal(x.grad.cpu(), torch.full((4,), 2.0))
    if R == 1:
        works[0].wait()
    works.clear()  # rank 0: gloo's worker now holds the only reference to the in-flight work
    destroy(held.pop())
    if R == 0:
        STORE.set(f"teardown/{name}", "1")
    t0 = time.monotonic()
    del model  # the Reducer drops the last reference to the group, with the GIL held
    gc.collect()
    teardown_s = time.monotonic() - t0
    # ~ProcessGroupGloo waited for the work: the all_reduce finished before the group went
    assert buf.cpu().tolist() == [2.0] * 4, buf
    assert seen["before"] == seen["after"] == ("caller", True), seen
    return {"teardown_s": teardown_s}


# The Reducer must hold the last reference to the group: the groups are passed on, never kept
# (a Python ProcessGroup object releases the GIL when it frees the group).
def split_child():
    return in_flight_teardown(
        "split_group", dist.split_group(split_ranks=[[0, 1]]), dist.destroy_process_group
    )


def new_group_child():
    return in_flight_teardown("new_group", dist.new_group(ranks=[0, 1]), dist.destroy_process_group)


def threads_and_sockets():
    gc.collect()
    sockets = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            sockets += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
        except OSError:  # the listing's own descriptor, closed by now
            pass
    return len(os.listdir("/proc/self/task")), sockets


def many_groups():
    """Groups created, used from backward and destroyed, over and over: gloo's threads and
    sockets go with each group (the fix keeps PyTorch's group lifetimes)."""
    buf = torch.ones(4, device=DEV)

    def cycle():
        held = [dist.new_group(ranks=[0, 1])]

        def hook(grad):
            dist.all_reduce(buf, group=held[0])
            return grad

        x = torch.ones(4, device=DEV, requires_grad=True)
        y = x * 2
        y.register_hook(hook)
        y.sum().backward()
        dist.destroy_process_group(held.pop())

    cycle()  # the first backward also starts the autograd engine's device threads
    before = threads_and_sockets()
    after = []
    for _ in range(4):
        cycle()
        after.append(threads_and_sockets())
    return {"before": before, "after": after}


record("split_group", split_child)
record("new_group", new_group_child)
record("many_groups", many_groups)
write_results()
