"""Point 4: failures surface as errors, never hangs.

argv[1] = scenario:
  dead       rank 1 exits before the collective; rank 0's all_reduce must raise.
  absent     rank 1 is alive but never joins; rank 0's all_reduce (sync and async) must
             raise a timeout error (process-group timeout = 3 s).
  mismatch   (run with TORCH_DISTRIBUTED_DEBUG=DETAIL or TORCH_NEURONX_COLLECTIVE_CHECKS=1)
             size, dtype and op mismatches across ranks raise a clear "mismatch between
             collectives" error on every rank; the group stays usable; argv[2] = backend
             string (default "neuron").
"""

import datetime
import os
import sys
import time

import torch
import torch.distributed as dist
from nxcommon import record, write_results

SCENARIO = sys.argv[1]
TIMEOUT_S = 3.0

if SCENARIO == "too_many_ranks":
    # run with NEURON_RT_VISIBLE_CORES=0: one visible core, two local ranks
    record(
        "init",
        lambda: dist.init_process_group("neuron", timeout=datetime.timedelta(seconds=TIMEOUT_S)),
    )
    write_results({"device_count": torch.neuron.device_count()})
    os._exit(0)

BACKEND = sys.argv[2] if len(sys.argv) > 2 else "neuron"
dist.init_process_group(BACKEND, timeout=datetime.timedelta(seconds=TIMEOUT_S))
R = dist.get_rank()
DEV = torch.device("neuron", int(os.environ["LOCAL_RANK"]))
OUT = os.environ["NX_TEST_OUT"]
dist.all_reduce(torch.ones(2, device=DEV))  # connections are up


def expect_error(fn):
    """The RuntimeError (gloo's errors, DistBackendError, DistNetworkError) ``fn`` raises;
    any other exception fails the check with its traceback."""
    t0 = time.monotonic()
    try:
        fn()
    except RuntimeError as e:
        return {
            "raised": type(e).__name__,
            "message": str(e)[:2000],
            "elapsed_s": round(time.monotonic() - t0, 2),
        }
    raise AssertionError("no error raised")


def wait_for_rank0():
    # park until rank 0 has written its results (bounded by the harness timeout)
    while not os.path.exists(os.path.join(OUT, "rank0.json")):
        time.sleep(0.2)


if SCENARIO == "dead":
    if R == 1:
        os._exit(0)  # dies without destroying the group
    record("peer_died", expect_error, lambda: dist.all_reduce(torch.ones(4, device=DEV)))
    write_results({"timeout_s": TIMEOUT_S})
    os._exit(0)

elif SCENARIO in ("absent", "absent_async"):
    if R == 1:
        wait_for_rank0()
        os._exit(0)
    if SCENARIO == "absent":
        record(
            "never_reached_sync", expect_error, lambda: dist.all_reduce(torch.ones(4, device=DEV))
        )
    else:
        record(
            "never_reached_async",
            expect_error,
            lambda: dist.all_gather_into_tensor(
                torch.empty(8, device=DEV), torch.ones(4, device=DEV), async_op=True
            ).wait(),
        )
    write_results({"timeout_s": TIMEOUT_S})
    os._exit(0)

elif SCENARIO == "mismatch":

    def backend_types():  # one wrapper around gloo, never two (the switch defers to DETAIL)
        b = dist.group.WORLD._get_backend(DEV)
        return [type(b).__name__, type(b.wrapped_pg).__name__]

    record("backend_types", backend_types)
    record(
        "shape_mismatch",
        expect_error,
        lambda: dist.all_reduce(torch.ones(4 if R == 0 else 8, device=DEV)),
    )
    record(
        "dtype_mismatch",
        expect_error,
        lambda: dist.all_reduce(
            torch.ones(4, device=DEV, dtype=torch.float32 if R == 0 else torch.int32)
        ),
    )
    record(
        "op_mismatch",
        expect_error,
        lambda: (
            dist.all_reduce(torch.ones(4, device=DEV))
            if R == 0
            else dist.broadcast(torch.ones(4, device=DEV), src=0)
        ),
    )
    sub = dist.new_group([0, 1])  # a new_group child is checked too
    record(
        "subgroup_shape_mismatch",
        expect_error,
        lambda: dist.all_gather_into_tensor(
            torch.empty(2 * (4 if R == 0 else 6), device=DEV),
            torch.ones(4 if R == 0 else 6, device=DEV),
            group=sub,
        ),
    )
    t = torch.ones(4, device=DEV)
    record("still_usable_after", lambda: (dist.all_reduce(t), t.cpu().tolist())[1])

    def split_and_reduce():  # a checked parent still splits (its child is not checked)
        dist.group.WORLD.bound_device_id = DEV  # split_group needs a bound default group
        child = dist.split_group(split_ranks=[[0, 1]])
        x = torch.full((4,), float(R + 1), device=DEV)
        dist.all_reduce(x, group=child)
        return {"sum": x.cpu().tolist(), "backend": type(child._get_backend(DEV)).__name__}

    record("split_child_usable", split_and_reduce)
    write_results()
    dist.destroy_process_group()
