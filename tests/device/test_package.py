"""Packaging and autoload (issue 2, point 1)."""

import re
import tomllib
from importlib import metadata
from pathlib import Path

import torch

import torch_neuronx
from torch_neuronx import _version

REPO = Path(__file__).resolve().parents[2]


def test_version_is_defined_once():
    # torch_neuronx/_version.py is the one definition: the package and the installed
    # distribution's metadata (pyproject reads it there) report it.
    assert re.fullmatch(r"\d+\.\d+\.\d+", _version.__version__), _version.__version__
    assert torch_neuronx.__version__ == _version.__version__
    assert metadata.version("torch-neuronx") == _version.__version__


def test_one_torch_pin():
    """pyproject's dependency and build requirement and the Makefile's TORCH_PIN name one
    exact torch, the one this test runs with."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    runtime = [r for r in project["project"]["dependencies"] if re.match(r"torch\b", r)]
    build = [r for r in project["build-system"]["requires"] if re.match(r"torch\b", r)]
    make = re.findall(r"^TORCH_PIN := (\S+)$", (REPO / "Makefile").read_text(), re.M)
    assert len(runtime) == 1 and runtime == build == make, (runtime, build, make)
    assert runtime[0].startswith("torch=="), runtime
    assert torch.__version__.split("+")[0] == runtime[0].removeprefix("torch==")


def test_autoload_without_import(py):
    py("""
        import torch
        x = torch.ones(2, device='neuron')
        assert x.device == torch.device('neuron:0'), x.device
        assert x.sum().item() == 2.0
        """)


def test_autoload_can_be_disabled(py):
    py(
        """
        import sys, torch
        assert 'torch_neuronx' not in sys.modules
        try:
            torch.ones(2, device='neuron')
        except RuntimeError as e:
            # PyTorch's own parser: without the backend, 'neuron' is no device type
            assert "Expected one of" in str(e) and "neuron" in str(e), e
        else:
            raise AssertionError("a neuron tensor was created with autoload disabled")
        """,
        env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"},
    )


def test_importing_package_first_works(py):
    py("""
        import torch_neuronx, torch
        assert torch.neuron.device_count() == 4
        """)


def test_extension_is_prebuilt():
    # Built at install time, never at import: the module is a shared object on disk.
    assert torch_neuronx._C.__file__.endswith(".so")


def test_entry_points_registered():
    from importlib.metadata import entry_points

    names = {ep.name for ep in entry_points(group="torch.backends")}
    assert "torch_neuronx" in names
