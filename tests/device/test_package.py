"""Packaging and autoload (issue 2, point 1)."""
import torch

import torch_neuronx


def test_version():
    assert isinstance(torch_neuronx.__version__, str) and torch_neuronx.__version__


def test_autoload_without_import(py):
    r = py("import torch; x = torch.ones(2, device='neuron'); print(x.device, x.sum().item())")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["neuron:0", "2.0"]


def test_autoload_can_be_disabled(py):
    r = py("""
        import torch
        try:
            torch.ones(2, device='neuron')
        except RuntimeError as e:
            print('refused')
        """, env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
    assert r.returncode == 0, r.stderr
    assert "refused" in r.stdout


def test_importing_package_first_works(py):
    r = py("import torch_neuronx, torch; print(torch.neuron.device_count())")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "4"


def test_extension_is_prebuilt():
    # Built at install time, never at import: the module is a shared object on disk.
    assert torch_neuronx._C.__file__.endswith(".so")


def test_entry_points_registered():
    from importlib.metadata import entry_points

    names = {ep.name for ep in entry_points(group="torch.backends")}
    assert "torch_neuronx" in names
