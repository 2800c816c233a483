"""Fixtures of the NKI tests: the examples (examples/nki) become importable modules."""

import os
import sys

EXAMPLES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "examples", "nki"))
if EXAMPLES not in sys.path:
    sys.path.insert(0, EXAMPLES)
