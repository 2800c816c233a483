"""Differential fuzzing (torch_neuronx/testing/fuzz/): random tensor programs give CPU's results
on neuron (values bitwise, dtypes, shapes, strides, aliasing, and which statements raise).

CI runs a fixed sample of seeds (a few seconds); ``TORCH_NEURONX_TEST_FULL=1`` (``make test-full``)
runs thousands. A failure prints the shrunk program as a Python reproducer.
"""

import collections

import pytest
import torch

from torch_neuronx.runtime import env
from torch_neuronx.testing import fuzz

CI_SEEDS = range(0, 48)
FULL_SEEDS = range(0, 4000)
FULL = env.flag("TORCH_NEURONX_TEST_FULL")


def _new_failures(report: fuzz.Report) -> list:
    """Failures that no open bug of fuzz.KNOWN_BUGS explains."""
    return [f for f in report.failures if fuzz.known_bug(f) is None]


def _fail_text(failures) -> str:
    return "\n\n".join(fuzz.reproducer(f) for f in failures[:5])


@pytest.mark.parametrize("seed", CI_SEEDS)
def test_fuzz_program_agrees_with_cpu(seed):
    report = fuzz.run([seed])
    new = _new_failures(report)
    assert not new, _fail_text(new)
    if report.failures:
        pytest.xfail(
            "open bug: " + ", ".join(sorted({fuzz.known_bug(f).name for f in report.failures}))
        )


@pytest.mark.skipif(
    not FULL, reason="thousands of programs: TORCH_NEURONX_TEST_FULL=1 (make test-full)"
)
def test_fuzz_full_sweep():
    report = fuzz.run(FULL_SEEDS)
    known = collections.Counter(
        fuzz.known_bug(f).name for f in report.failures if fuzz.known_bug(f)
    )
    print(report.summary(), dict(known))
    new = _new_failures(report)
    assert not new, _fail_text(new)


def test_known_bug_reproducers_still_fail():
    """Each open bug's reproducer still differs from CPU; when one passes, remove its entry
    from ``fuzz.KNOWN_BUGS`` (the list is empty while no driver bug is known)."""
    for bug in fuzz.KNOWN_BUGS:
        prog = fuzz.Program(0, [fuzz.Statement("known", c) for c in bug.reproducer], set())
        assert fuzz.compare(prog) is not None, f"{bug.name} is fixed: remove it from KNOWN_BUGS"


def test_ci_sample_covers_every_statement_kind():
    kinds = set()
    for seed in CI_SEEDS:
        kinds.update(s.kind for s in fuzz.generate(seed).statements)
    assert kinds == set(fuzz.KINDS)


def test_generation_is_deterministic():
    a, b = fuzz.generate(7), fuzz.generate(7)
    assert [s.code for s in a.statements] == [s.code for s in b.statements]
    assert [s.code for s in a.statements] != [s.code for s in fuzz.generate(8).statements]


def _prog(*codes):
    return fuzz.Program(0, [fuzz.Statement("broadcast", c) for c in codes], set())


def test_harness_detects_and_shrinks_a_difference():
    # a program whose last statement behaves differently on the two devices
    prog = _prog(
        "a = torch.arange(6.0).to(dev)",
        "b = a.view(2, 3).t()",
        "c = a * 2",
        "d = b + (0 if dev == 'cpu' else 1e-7)",
    )
    failure = fuzz.check(prog)
    assert failure is not None and "values differ" in failure.message
    small = fuzz.shrink(failure)
    assert [s.code for s in small.program.statements] == [
        prog.statements[0].code,
        prog.statements[1].code,
        prog.statements[3].code,
    ]
    text = fuzz.reproducer(small)
    assert "def program(dev):" in text and "a.view(2, 3).t()" in text and "a * 2" not in text
    ns = {}
    exec(compile(text, "<reproducer>", "exec"), ns)  # the reproducer itself runs


def test_harness_detects_aliasing_strides_and_error_differences():
    alias = _prog("a = torch.zeros(4).to(dev)", "b = a[:2] if dev == 'cpu' else a[:2].clone()")
    assert "storage sharing" in fuzz.compare(alias)
    strides = _prog(
        "a = torch.zeros(2, 3).to(dev)", "b = a if dev == 'cpu' else a.t().contiguous().t()"
    )
    assert "strides" in fuzz.compare(strides)
    error = _prog("a = torch.zeros(2).to(dev)", "b = a.view(3) if dev == 'cpu' else a")
    assert "RuntimeError" in fuzz.compare(error)
    same_error = _prog("a = torch.zeros(2).to(dev)", "b = a.view(3)")
    assert fuzz.compare(same_error) is None


def test_64bit_arithmetic_is_compared_with_the_stated_tolerance():
    # float64 arithmetic runs in float32 on neuron (policy): a tolerance, but only for it
    x = torch.randn(8, dtype=torch.float64)
    assert fuzz._compare_values("x", x, x.float().double(), approx=True) is None
    assert fuzz._compare_values("x", x, x.float().double(), approx=False) is not None
    assert fuzz._compare_values("x", x, x * 1.01, approx=True) is not None


def test_inputs_are_drawn_in_every_layout():
    """The fuzzer draws its inputs' memory layouts (seeded, written into the program, so the
    reproducer shows them): the CI seeds cover every layout, and each drawn layout reaches
    the device with CPU's strides and storage offset."""
    from torch_neuronx.testing.layouts import LAYOUT_NAMES

    report = fuzz.run(CI_SEEDS[:24], shrink_failures=False)
    assert set(report.layouts) == set(LAYOUT_NAMES), report.layouts
    assert report.layouts["contiguous"] < sum(report.layouts.values())
    prog = fuzz.generate(CI_SEEDS[0])
    assert prog.statements == fuzz.generate(CI_SEEDS[0]).statements  # seeded
    st = next(s for s in prog.statements if "apply_layout(" in s.code)
    text = fuzz.reproducer(fuzz.Failure(fuzz.Program(0, [st], set()), "layout"))
    assert "from torch_neuronx.testing.layouts import" in text
    ns: dict = {}
    exec(text.split("cpu, dev =")[0], ns)  # the reproducer's program runs as printed
    cpu, dev = ns["program"]("cpu"), ns["program"]("neuron")
    for k, c in cpu.items():
        d = dev[k]
        assert (d.stride(), d.storage_offset()) == (c.stride(), c.storage_offset())
        assert torch.equal(d.cpu(), c)
