"""`torch-neuronx` command line: verify (TorchNeuron's quickstart check), info, ops."""

from __future__ import annotations

import argparse
import json
import platform
import sys

from torch_neuronx.evaluate.cli_args import EXIT_USAGE, Parser, UsageError, quiet_broken_pipe
from torch_neuronx.tools import cost
from torch_neuronx.tools.table import print_table as _print_table


def cmd_info(args) -> int:
    import torch

    from torch_neuronx._version import __version__
    from torch_neuronx.runtime import topology

    topo = topology.current()
    if args.json:
        print(
            json.dumps(
                {
                    "torch_neuronx": __version__,
                    "torch": torch.__version__,
                    "python": platform.python_version(),
                    "profile": topo.profile.name,
                    "lnc": topo.lnc,
                    "devices": [
                        {"index": i, "logical_core": c, "total_memory": topo.hbm_per_core}
                        for i, c in enumerate(topo.visible_cores)
                    ],
                    "hardware": [
                        {"figure": f, "value": v, "source": src}
                        for f, v, src in cost.hardware_rows(topo.profile.name, topo.lnc)
                    ],
                },
                indent=2,
            )
        )
        return 0
    print(
        f"torch_neuronx {__version__}  torch {torch.__version__}  "
        f"python {platform.python_version()}"
    )
    print(
        f"emulated instance: {topo.profile.name} ({topo.profile.chips} chip(s) x "
        f"{topo.profile.physical_cores_per_chip} {topo.profile.core_name}), "
        f"LNC={topo.lnc}, {topo.logical_cores_total} logical cores, {topo.device_count} visible"
    )
    rows = [
        [f"neuron:{i}", c, f"{topo.hbm_per_core / 2**30:.1f} GiB"]
        for i, c in enumerate(topo.visible_cores)
    ]
    _print_table("devices", ["device", "logical core", "HBM capacity"], rows)
    if not getattr(args, "hardware", True):  # verify prints the devices only
        return 0
    hw_rows = cost.hardware_rows(topo.profile.name, topo.lnc)
    _print_table(
        f"hardware table of {topo.profile.name} (torch_neuronx/runtime/hardware.py)",
        ["figure", "value", "source"],
        hw_rows,
    )
    _print_table("sources", ["key", "public document"], cost.source_rows(hw_rows))
    return 0


def cmd_verify(args) -> int:
    import torch

    checks: list[tuple[str, bool, str]] = []

    def check(name, fn):
        try:
            ok, detail = fn()
        except Exception as e:  # a failed check is reported, not raised
            ok, detail = False, f"{type(e).__name__}: {e}"
        checks.append((name, ok, detail))
        return ok

    check(
        "neuron device available",
        lambda: (torch.neuron.is_available(), f"{torch.neuron.device_count()} device(s)"),
    )
    cmd_info(argparse.Namespace(json=False, hardware=False))

    def matmul():
        g = torch.Generator().manual_seed(0)
        a = torch.randn(128, 64, generator=g)
        b = torch.randn(64, 32, generator=g)
        ref = a @ b
        got = (a.to("neuron") @ b.to("neuron")).cpu()
        err = (got - ref).abs().max().item()
        return torch.allclose(got, ref, rtol=1e-5, atol=1e-5), f"max abs diff {err:.2e}"

    check("matmul on neuron matches CPU", matmul)

    def train():
        losses = {}
        for dev in ("cpu", "neuron"):
            torch.manual_seed(0)
            model = torch.nn.Sequential(
                torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4)
            ).to(dev)
            opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
            g = torch.Generator().manual_seed(1)
            x = torch.randn(32, 16, generator=g).to(dev)
            y = torch.randint(0, 4, (32,), generator=g).to(dev)
            out = []
            for _ in range(5):
                loss = torch.nn.functional.cross_entropy(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                out.append(loss.item())
            losses[dev] = out
        diff = max(
            abs(a - b) / max(abs(a), 1e-12)
            for a, b in zip(losses["cpu"], losses["neuron"], strict=True)
        )
        decreasing = losses["neuron"][-1] < losses["neuron"][0]
        return diff < 1e-4 and decreasing, (
            f"5 AdamW steps, loss {losses['neuron'][0]:.4f} -> "
            f"{losses['neuron'][-1]:.4f}, max rel diff vs CPU {diff:.1e}"
        )

    check("training steps on neuron match CPU", train)
    _print_table(
        "torch-neuronx verify",
        ["check", "result", "detail"],
        [[n, "PASS" if ok else "FAIL", d] for n, ok, d in checks],
    )
    ok = all(ok for _, ok, _ in checks)
    print("verify: all checks passed" if ok else "verify: FAILED")
    return 0 if ok else 1


def cmd_ops(args) -> int:
    import torch  # noqa: F401  (registers the backend)

    from torch_neuronx.eager.op_policy import compatibility_rows

    rows = compatibility_rows()
    if args.status:
        rows = [r for r in rows if r["status"] == args.status]
    if args.format == "json":
        print(json.dumps(rows, indent=1))
    elif args.format == "markdown":
        counts = {}
        for r in rows:
            counts[r["status"]] = counts.get(r["status"], 0) + 1
        print("# Operator compatibility (generated by `torch-neuronx ops --format markdown`)\n")
        print(
            "Status of every ATen operator on the `neuron` device, from the op policy table "
            "(torch_neuronx/eager/op_policy.py). `native`: runs on the NeuronCore; `fallback`: "
            "runs via CPU fallback with a one-time warning (an error under "
            "`TORCH_NEURONX_STRICT=1`); `unsupported`: raises.\n"
        )
        print("Totals: " + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())) + "\n")
        print("| op | status | reason |\n|---|---|---|")
        for r in rows:
            print(f"| `{r['op']}` | {r['status']} | {r['reason']} |")
    else:
        _print_table(
            "operator compatibility",
            ["op", "status", "reason"],
            [[r["op"], r["status"], r["reason"]] for r in rows],
        )
    return 0


def main(argv=None) -> int:
    """Runs one subcommand. Bad arguments: one line on stderr, exit 2 (argparse's own checks
    and the ``UsageError`` a subcommand finds later); a reader that closes stdout early
    (``| head``) ends the command quietly (evaluate/cli_args.py)."""
    p = _parser()
    args = p.parse_args(argv)
    try:
        rc = args.fn(args)
        sys.stdout.flush()  # a closed pipe shows here, inside the handler, not at exit
        return rc
    except UsageError as e:
        print(f"torch-neuronx {args.cmd}: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        return quiet_broken_pipe()


def _parser() -> argparse.ArgumentParser:
    p = Parser(prog="torch-neuronx", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("verify", help="check the neuron device end to end (exit 0 when all agree)")
    v.set_defaults(fn=cmd_verify)
    i = sub.add_parser("info", help="emulated profile, devices, capacities, versions")
    i.add_argument("--json", action="store_true")
    i.set_defaults(fn=cmd_info)
    o = sub.add_parser("ops", help="operator compatibility table")
    o.add_argument("--format", choices=["table", "markdown", "json"], default="table")
    o.add_argument("--status", choices=["native", "fallback", "unsupported"])
    o.set_defaults(fn=cmd_ops)
    cost.add_parser(sub)  # torch-neuronx cost: the performance model's cost of one op
    from torch_neuronx.tools import nki_coverage

    nki_coverage.add_parser(sub)  # torch-neuronx nki-coverage: docs/nki.md's coverage table
    # torch-neuronx evaluate: the migration report
    from torch_neuronx.evaluate import cli as evaluate_cli

    evaluate_cli.add_parser(sub)
    return p


if __name__ == "__main__":
    sys.exit(main())
