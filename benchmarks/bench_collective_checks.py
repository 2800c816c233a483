"""What TORCH_NEURONX_COLLECTIVE_CHECKS=1 costs per collective (issue 28).

One run launches 2 ranks on this host (env:// rendezvous on loopback). Each rank makes two
neuron groups over the same ranks, one plain and one created with the switch on (its backend
inside PyTorch's ProcessGroupWrapper), and times all_reduce on both call by call, in
alternating order, so both sides see the same machine load.

    .venv/bin/python benchmarks/bench_collective_checks.py
    .venv/bin/python benchmarks/bench_collective_checks.py --numels 256 262144 --pairs 500 50

Reported per size: median time per call on each group and their ratio (checked / plain).
"""

from __future__ import annotations

import argparse
import datetime
import os
import socket
import statistics
import subprocess
import sys
import time

SWITCH = "TORCH_NEURONX_COLLECTIVE_CHECKS"


def _worker(args):
    import torch
    import torch.distributed as dist

    dist.init_process_group("neuron", timeout=datetime.timedelta(seconds=300))
    dev = torch.device("neuron", int(os.environ["LOCAL_RANK"]))
    plain = dist.new_group(backend="neuron")
    os.environ[SWITCH] = "1"  # read when the group's backend is created
    checked = dist.new_group(backend="neuron")
    del os.environ[SWITCH]
    assert type(checked._get_backend(dev)).__name__ == "_ProcessGroupWrapper"
    assert type(plain._get_backend(dev)).__name__ == "ProcessGroupGloo"
    for numel, pairs in zip(args.numels, args.pairs, strict=True):
        t = torch.ones(numel, device=dev)
        for g in (plain, checked):  # warm-up: connections, buffers
            for _ in range(10):
                dist.all_reduce(t, group=g)
        times = {"plain": [], "checked": []}
        for i in range(pairs):
            order = (("plain", plain), ("checked", checked))
            for name, g in order if i % 2 == 0 else order[::-1]:
                t0 = time.perf_counter()
                dist.all_reduce(t, group=g)
                times[name].append(time.perf_counter() - t0)
        if dist.get_rank() == 0:
            p, c = (statistics.median(times[k]) * 1e6 for k in ("plain", "checked"))
            print(
                f"| all_reduce | {numel * 4} B | {pairs} | {p:.1f} | {c:.1f} | {c - p:+.1f} "
                f"| {c / p:.2f} |",
                flush=True,
            )
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--numels", type=int, nargs="+", default=[256, 262144, 4194304])
    p.add_argument("--pairs", type=int, nargs="+", default=[1000, 100, 20])
    p.add_argument("--_worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if len(args.pairs) != len(args.numels):
        p.error("--pairs needs one count per --numels entry")
    if args._worker:
        return _worker(args)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    print("| op | message | pairs | plain us (median) | checked us (median) | added us | ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|", flush=True)
    procs = []
    for rank in range(2):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK=str(rank))
        env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1")
        env.pop(SWITCH, None)
        env.pop("TORCH_DISTRIBUTED_DEBUG", None)
        argv = [sys.executable, __file__, "--_worker", "--numels", *map(str, args.numels)]
        procs.append(subprocess.Popen(argv + ["--pairs", *map(str, args.pairs)], env=env))
    sys.exit(max(proc.wait() for proc in procs))


if __name__ == "__main__":
    main()
