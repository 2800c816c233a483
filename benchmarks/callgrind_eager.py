#!/usr/bin/env python
"""Instruction counts of the eager path, neuron vs CPU, under callgrind (not a test).

Wall-clock ratios on a shared 2-core machine move by +-20% between runs; instruction counts
do not (callgrind counts what the CPU executes, whatever else the machine is doing). This
script runs each workload of ``bench_eager.py`` under ``valgrind --tool=callgrind`` with
collection switched on only around the measured iterations (a 10-line C helper issues
callgrind's client requests; it is compiled into a temporary directory at run time), and
prints instructions per iteration on neuron and CPU, their ratio, and a per-stage breakdown
of the neuron path (inclusive instructions per iteration in the driver's functions).

Usage::

    python benchmarks/callgrind_eager.py                      # all workloads, 2000/20 iterations
    python benchmarks/callgrind_eager.py --only op_overhead --stages
    python benchmarks/callgrind_eager.py --json out.json

Needs valgrind (``callgrind_annotate`` for ``--stages``) and a C compiler. Each workload runs
in its own process per device, under valgrind (about a minute each: importing torch is slow
under instrumentation).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_HELPER_C = r"""
#include <valgrind/callgrind.h>
void cg_start(void) { CALLGRIND_ZERO_STATS; CALLGRIND_TOGGLE_COLLECT; }
void cg_stop(void) { CALLGRIND_TOGGLE_COLLECT; CALLGRIND_DUMP_STATS_AT("measured"); }
"""

_CHILD = r"""
import ctypes, os, sys
sys.path.insert(0, sys.argv[4])
if sys.argv[6] != "-":  # another build of the driver (e.g. one without the perf hook)
    import importlib.util
    import torch
    spec = importlib.util.spec_from_file_location("torch_neuronx._C", sys.argv[6])
    mod = importlib.util.module_from_spec(spec)
    sys.modules["torch_neuronx._C"] = mod
    spec.loader.exec_module(mod)
    import torch_neuronx  # noqa: F401
import torch
torch.set_num_threads(1)
import bench_eager as be
helper = ctypes.CDLL(sys.argv[1])
name, device, n = sys.argv[2], sys.argv[3], int(sys.argv[5])
run = be.BENCHMARKS[name][0](device)
run(max(3, n // 10))  # warm-up: first-call costs, plan cache, allocator growth
helper.cg_start()
run(n)
helper.cg_stop()
"""

# The fast path's kernels (csrc/eager/fast_*.cpp): none calls another, so their inclusive costs
# add up (device copies are counted on their own line: fast kernels such as addmm run one inside).
_FAST_KERNELS = re.compile(
    r"torch_neuronx::fast::\(anonymous namespace\)::(add|add_|sub|sub_|mul|mul_|div|div_|mm|addmm"
    r"|threshold_backward|neg|rsqrt|silu|silu_backward|pow_scalar|sum_dim|relu|log_softmax"
    r"|log_softmax_backward|fill_|zero_|foreach_\w+|lerp_scalar_|addcmul_|addcdiv_|sqrt"
    r"|layer_norm|layer_norm_backward|nll_loss_forward|nll_loss_backward)\("
)

# Functions of the neuron path whose inclusive cost is the per-stage breakdown (substring match
# on callgrind_annotate's function names, or a regular expression whose matches add up; for a
# substring the first match counts).
STAGES = (
    ("dispatch into the driver (boxed call)", "make_boxed_function<&torch_neuronx::"),
    ("driver: generic path (run_on_core_impl)", "run_on_core_impl("),
    ("  op entry + plan cache lookup", "torch_neuronx::plan_for("),
    ("  host aliases of inputs", "torch_neuronx::host_alias(at::Tensor const&)"),
    ("  CPU kernel (redispatch)", "OperatorHandle::redispatchBoxed("),
    ("  outputs become neuron tensors", "to_neuron_output("),
    ("driver: fast path (fast_*.cpp kernels)", _FAST_KERNELS),
    # (account() is inlined into each kernel: its argument key is hashed there, uncounted here)
    ("  plan cache lookup (key hashed in the kernel)", "torch_neuronx::cached_plan("),
    (
        "  CPU's meta functions (shapes, dtypes, checks)",
        re.compile(r"at::meta::structured_\w+::meta\("),
    ),
    ("  outputs allocated on the device", "torch_neuronx::fast::empty_on_device("),
    ("device-to-device copies (fast_copy.cpp)", "torch_neuronx::fast_device_copy("),
    ("device allocator: allocate", "DeviceAllocator::allocate("),
    # device memory's deleter (delete_device_block: the DataPtr holds the block) or, for host
    # workspace and before 9f18661, the one that looks the block up by pointer (delete_block)
    (
        "device allocator: free",
        re.compile(r"torch_neuronx::\(anonymous namespace\)::delete_(?:device_)?block\("),
    ),
)

ITERATIONS = {
    "op_overhead": 2000,
    "mlp_sgd_step": 40,
    "tinygpt_adamw_step": 10,
    "decoder_block_step": 4,
}


def _build_helper(tmp: str) -> str:
    src = os.path.join(tmp, "cg_helper.c")
    lib = os.path.join(tmp, "cg_helper.so")
    with open(src, "w") as f:
        f.write(_HELPER_C)
    subprocess.run(["cc", "-O1", "-shared", "-fPIC", "-o", lib, src], check=True)
    return lib


def _measure(
    lib: str,
    tmp: str,
    name: str,
    device: str,
    n: int,
    generic: bool = False,
    so: str = "-",
    sim: bool = False,
) -> tuple[dict[str, int], str]:
    """Callgrind's totals of the measured iterations (event name -> count; "Ir" is
    instructions) and the path of its profile."""
    tag = "generic" if generic else ("so" if so != "-" else "")
    out = os.path.join(tmp, f"{name}-{device}{tag}.cg")
    child = os.path.join(tmp, "child.py")
    with open(child, "w") as f:
        f.write(_CHILD)
    env = dict(os.environ, PYTHONHASHSEED="0")
    if generic:
        env["TORCH_NEURONX_EAGER_FAST_PATH"] = "0"
    if so != "-":
        env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"  # the child loads `so` itself
    cmd = [
        "valgrind",
        "--tool=callgrind",
        "--collect-atstart=no",
        *(["--cache-sim=yes", "--branch-sim=yes"] if sim else []),
        f"--callgrind-out-file={out}",
        sys.executable,
        child,
        lib,
        name,
        device,
        os.path.join(_ROOT, "benchmarks"),
        str(n),
        so,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"{name} on {device} failed under valgrind:\n{proc.stderr[-3000:]}")
    # The dump at cg_stop holds the measured part: the file with a ".N" suffix written then.
    dumps = sorted(p for p in os.listdir(tmp) if p.startswith(os.path.basename(out) + "."))
    path = os.path.join(tmp, dumps[0]) if dumps else out
    with open(path) as f:
        text = f.read()
    events = re.search(r"^events:\s+(.+)$", text, re.M)
    m = re.search(r"^summary:\s+([\d ]+)$", text, re.M) or re.search(
        r"^totals:\s+([\d ]+)$", text, re.M
    )
    if not events or not m:
        raise RuntimeError(f"no totals in {path}")
    return dict(zip(events.group(1).split(), map(int, m.group(1).split()))), path


def _stages(path: str, n: int) -> list[tuple[str, float]]:
    out = subprocess.run(
        ["callgrind_annotate", "--inclusive=yes", "--threshold=100", path],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = []
    for label, needle in STAGES:
        if isinstance(needle, re.Pattern):
            total = 0
            for line in out.splitlines():
                m = re.match(r"\s*([\d,]+)", line)
                if m and "=>" not in line and " [" in line and needle.search(line):
                    total += int(m.group(1).replace(",", ""))
            rows.append((label, total / n))
            continue
        for line in out.splitlines():
            # one line per function with its object file ("... [lib.so]"); callgrind also lists
            # inlined source attributions without it, which would count twice
            if needle in line and "=>" not in line and " [" in line:
                m = re.match(r"\s*([\d,]+)", line)
                if m:
                    rows.append((label, int(m.group(1).replace(",", "")) / n))
                    break
        else:
            rows.append((label, 0.0))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append", choices=list(ITERATIONS))
    ap.add_argument("--iterations", type=int, help="override the per-workload iteration count")
    ap.add_argument("--stages", action="store_true", help="per-stage breakdown of the neuron path")
    ap.add_argument(
        "--sim",
        action="store_true",
        help="also simulate caches and branch prediction (callgrind's --cache-sim/--branch-sim) "
        "and print first-level cache misses and mispredicted branches per iteration: costs "
        "that instructions do not show",
    )
    ap.add_argument("--json", metavar="PATH")
    ap.add_argument("--keep", metavar="DIR", help="keep the callgrind files in DIR")
    ap.add_argument(
        "--generic",
        action="store_true",
        help="neuron with the fast path off (TORCH_NEURONX_EAGER_FAST_PATH=0): the generic path",
    )
    ap.add_argument(
        "--baseline-so",
        metavar="PATH",
        help="also count neuron with this build of torch_neuronx/_C*.so (e.g. one built with "
        "CFLAGS=-DTORCH_NEURONX_NO_PERF_HOOK) and print the difference per iteration",
    )
    args = ap.parse_args(argv)
    if not shutil.which("valgrind"):
        print("callgrind_eager: valgrind is not installed (apt-get install valgrind)")
        return 2
    results = {}
    tmp = args.keep or tempfile.mkdtemp(prefix="cg-eager-")
    os.makedirs(tmp, exist_ok=True)
    lib = _build_helper(tmp)
    for name in args.only or list(ITERATIONS):
        n = args.iterations or ITERATIONS[name]
        nev, npath = _measure(lib, tmp, name, "neuron", n, args.generic, sim=args.sim)
        cev, _ = _measure(lib, tmp, name, "cpu", n, sim=args.sim)
        neuron, cpu = nev["Ir"], cev["Ir"]
        row = {
            "iterations": n,
            "neuron_instr_per_iter": neuron / n,
            "cpu_instr_per_iter": cpu / n,
            "ratio": neuron / cpu,
        }
        print(
            f"{name:20s} neuron {neuron / n:12,.0f}  cpu {cpu / n:12,.0f}  instructions/iter"
            f"  ratio {neuron / cpu:.3f}"
        )
        if args.sim:
            # callgrind's model (its own cache geometry, a simple predictor), not this CPU's
            # counters: a guide to where time goes beyond instructions, compared side by side
            sims = {
                "I1 misses": ("I1mr",),
                "D1 misses": ("D1mr", "D1mw"),
                "mispredicted branches": ("Bcm", "Bim"),
            }
            row["simulated"] = {}
            for label, keys in sims.items():
                nv = sum(nev.get(k, 0) for k in keys) / n
                cv = sum(cev.get(k, 0) for k in keys) / n
                row["simulated"][label] = {"neuron": nv, "cpu": cv}
                print(
                    f"    {label:44s} {nv:12,.0f}  cpu {cv:12,.0f}"
                    f"  ratio {nv / cv if cv else float('nan'):.3f}"
                )
        if args.stages:
            row["stages"] = dict(_stages(npath, n))
            for label, v in row["stages"].items():
                print(f"    {label:44s} {v:12,.0f}")
        if args.baseline_so:
            bev, _ = _measure(lib, tmp, name, "neuron", n, args.generic, args.baseline_so)
            base = bev["Ir"]
            row["baseline_so_instr_per_iter"] = base / n
            print(
                f"{'':20s} baseline build {base / n:12,.0f}  difference {(neuron - base) / n:+,.0f}"
                f" instructions/iter ({(neuron - base) / base:+.2%})"
            )
        results[name] = row
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
