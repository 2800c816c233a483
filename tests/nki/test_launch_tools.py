"""nki.baremetal / benchmark / profile (the neuronxcc.nki launch decorators): NumPy arrays in
and out on the emulated NeuronCore; benchmark's latency is the launch's modeled time (every
percentile), profile writes the modeled summary and says no NEFF/NTFF is produced."""

import json
import os

import numpy as np
import pytest
import torch

import torch_neuronx.nki.isa as nisa
import torch_neuronx.nki.language as nl
import torch_neuronx.nki.legacy as lnki
import torch_neuronx.nki.legacy.language as lnl
from torch_neuronx import nki
from torch_neuronx.nki import NkiValidationError


def tensor_add(a_tensor, b_tensor):
    """AWS's example kernel of these pages (pre-0.2 language)."""
    c_tensor = lnl.ndarray(a_tensor.shape, dtype=a_tensor.dtype, buffer=lnl.shared_hbm)
    a = lnl.load(a_tensor)
    b = lnl.load(b_tensor)
    c = a + b
    lnl.store(c_tensor, c)
    return c_tensor


def _inputs():
    a = np.zeros([128, 1024], dtype=np.float32)
    b = np.random.random_sample([128, 1024]).astype(np.float32)
    return a, b


def test_baremetal_numpy_in_and_out():
    k = lnki.baremetal(tensor_add)
    a, b = _inputs()
    c = k(a, b)
    assert isinstance(c, np.ndarray) and np.array_equal(c, a + b)
    # the old API's other standalone launch: neuron tensors in, neuron tensors out
    ta, tb = torch.from_numpy(a).to("neuron"), torch.from_numpy(b).to("neuron")
    assert torch.equal(lnki.simulate_kernel(tensor_add, ta, tb).cpu(), torch.from_numpy(a + b))

    @nki.baremetal(save_neff_name="file.neff")
    def exp_kernel(x):
        t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        nisa.activation(dst=t, data=t, op=nl.exp)
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)
        return out

    x = torch.randn(16, 8)
    with pytest.warns(UserWarning, match="save_neff_name ignored.*no NEFF/NTFF"):
        y = exp_kernel(x)  # CPU torch tensors in, CPU tensors out
    torch.testing.assert_close(y, torch.exp(x))


def test_benchmark_reports_the_modeled_latency(capsys):
    k = lnki.benchmark(warmup=10, iters=100)(tensor_add)
    a, b = _inputs()
    c = k(a, b)
    assert np.array_equal(c, a + b)
    metrics = k.benchmark_result.nc_latency
    report = k.benchmark_result.report
    assert metrics.get_latency_percentile(50) == pytest.approx(report.modeled_seconds * 1e6)
    assert metrics.get_latency_percentile(99) == metrics.get_latency_percentile(0) > 0
    assert "MODELED, not measured" in capsys.readouterr().out
    with pytest.raises(NkiValidationError, match="available percentiles"):
        metrics.get_latency_percentile(75)


def test_profile_writes_the_modeled_summary(tmp_path, capsys):
    wd = str(tmp_path / "profiles")
    k = lnki.profile(working_directory=wd, save_neff_name="file.neff", profile_nth=2)(tensor_add)
    a, b = _inputs()
    k(a, b)
    assert not os.path.exists(wd)  # profiles the 2nd execution
    assert np.array_equal(k(a, b), a + b)
    summary = json.load(open(os.path.join(wd, "nki_profile_summary.json")))
    assert summary["modeled_seconds"] > 0 and summary["instructions"]
    assert summary["not_produced"][0].startswith("file.neff")
    assert "no NTFF trace" in capsys.readouterr().out
    again = lnki.profile(working_directory=wd)(tensor_add)
    with pytest.raises(FileExistsError, match="overwrite=True"):
        again(a, b)
    with pytest.raises(NkiValidationError, match="absolute path"):
        lnki.profile(working_directory="rel")(tensor_add)(a, b)
