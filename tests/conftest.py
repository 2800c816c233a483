"""Shared test fixtures. The neuron backend autoloads with `import torch`."""

import pytest

from torch_neuronx.testing import child


@pytest.fixture
def py():
    """Runs code in a fresh interpreter; the code asserts its own expectations (a failure
    shows the child's traceback). Returns the child's stdout. See torch_neuronx.testing.child."""
    return child.run_ok
