"""Shrinking a failing program to a small one that still fails, and printing it as a
self-contained Python reproducer."""

from __future__ import annotations

from .execution import compare
from .program import LAYOUT_HELPERS, Failure, Program


def shrink(failure: Failure, device: str = "neuron") -> Failure:
    """Drops statements while the program still fails (any difference), to a fixpoint."""
    prog = failure.program
    msg = failure.message
    changed = True
    while changed:
        changed = False
        for i in reversed(range(len(prog.statements))):
            cand = Program(prog.seed, prog.statements[:i] + prog.statements[i + 1 :], prog.approx)
            m = compare(cand, device)
            if m:
                prog, msg, changed = cand, m, True
    return Failure(prog, msg)


def reproducer(failure: Failure, device: str = "neuron") -> str:
    """A self-contained script: runs the statements on CPU and on the device and compares."""
    body = "\n".join(f"    {s.code}" for s in failure.program.statements)
    return (
        f"# torch_neuronx fuzz reproducer (seed {failure.program.seed}): {failure.message.splitlines()[0]}\n"
        "import torch\n"
        f"{LAYOUT_HELPERS}\n\n"
        "def program(dev):\n"
        f"{body}\n"
        "    return {k: v for k, v in locals().items() if isinstance(v, torch.Tensor)}\n\n"
        f'cpu, dev = program("cpu"), program("{device}")\n'
        "for k in cpu:\n"
        "    c, d = cpu[k], dev[k].cpu()\n"
        "    print(k, c.dtype == d.dtype and c.shape == d.shape and c.stride() == d.stride()"
        " and torch.equal(c, d))\n"
    )
