"""Open bugs the fuzzer finds, each with its reproducer, and which one explains a failure."""

from __future__ import annotations

import dataclasses

from .program import Failure

# Open bugs the fuzzer finds. Each has a test: its reproducer must still fail (the test suite
# turns that into a strict expected failure, so the entry must go with the fix), and a CI
# program whose shrunk failure matches it is reported as that bug instead of a new failure.


@dataclasses.dataclass(frozen=True)
class KnownBug:
    name: str
    reason: str
    reproducer: tuple[str, ...]  # statements (using `dev`) that must differ between CPU and neuron
    message: str = ""  # regex on the failure message
    program: str = ""  # regex on the shrunk program's code (one statement per line)

    def matches(self, failure: Failure) -> bool:
        import re

        code = "\n".join(st.code for st in failure.program.statements)
        return bool(
            (not self.message or re.search(self.message, failure.message))
            and (not self.program or re.search(self.program, code, re.M))
        )


# regex for KnownBug.program: a program that involves 64-bit floats
_WIDE_RE = r"(float64|complex128|\.double\(\))"
KNOWN_BUGS: tuple[KnownBug, ...] = (
    # None open. Fixed (reproducers kept as tests): f64-data-movement-rounds and
    # f64-out-layout (tests/eager/test_float64_exact_ops.py, test_float64_out_layout.py),
    # overlap-checks-missing (tests/eager/test_memory_overlap.py).
)


def known_bug(failure: Failure) -> KnownBug | None:
    return next((b for b in KNOWN_BUGS if b.matches(failure)), None)
