"""Issue 23: the constants fitted on the workload calibration set are the stored ones."""

import pytest

from torch_neuronx.perf import params, workload_fit
from torch_neuronx.runtime import hardware as hw


def test_stored_constants_are_the_fit_of_the_workload_calibration_set():
    fitted = workload_fit.fit()
    stored = float(hw.COLLECTIVE_FIT["trn1"]["chip:reduce"][0])
    assert stored == pytest.approx(fitted["trn1_chip_reduce_fixed_s"], rel=0.02)
    assert params.Params().tensor_efficiency == pytest.approx(fitted["tensor_efficiency"], abs=0.01)


def test_fitted_figures_name_their_calibration_runs():
    fig = hw.COLLECTIVE_FIT["trn1"]["chip:reduce"][0]
    assert fig.source == "TRN1INF" and "workload_fit" in fig.note
    assert "TRN1INF" in hw.SOURCES
