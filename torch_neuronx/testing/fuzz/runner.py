"""Running many seeds (``run``) and the command line (``python -m torch_neuronx.testing.fuzz``)."""

from __future__ import annotations

from collections.abc import Iterable

from .execution import check
from .generation import generate
from .known_bugs import known_bug
from .program import Report, input_layout
from .shrinking import reproducer, shrink


def run(
    seeds: Iterable[int], device: str = "neuron", length: int = 14, shrink_failures: bool = True
) -> Report:
    report = Report()
    for seed in seeds:
        prog = generate(seed, length)
        report.programs += 1
        report.statements += len(prog.statements)
        report.kinds.update(s.kind for s in prog.statements)
        report.layouts.update(filter(None, map(input_layout, prog.statements)))
        fail = check(prog, device)
        if fail:
            report.failures.append(shrink(fail, device) if shrink_failures else fail)
    return report


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description="differential fuzzing: neuron vs CPU")
    ap.add_argument("--programs", type=int, default=1000)
    ap.add_argument("--start", type=int, default=0, help="first seed")
    ap.add_argument("--length", type=int, default=14, help="statements per program")
    args = ap.parse_args(argv)
    report = run(range(args.start, args.start + args.programs), length=args.length)
    print(report.summary())
    seen = set()
    for f in report.failures:
        key = f.message.splitlines()[0]
        if key in seen:
            continue
        seen.add(key)
        bug = known_bug(f)
        print(
            "\n" + (f"# open bug {bug.name}: {bug.reason}\n" if bug else "# NEW\n") + reproducer(f)
        )
    return 1 if report.failures else 0
