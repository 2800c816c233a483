"""TorchNeuron's logging variables (issue 10, point 6): TORCH_NEURONX_LOG_LEVEL (0-3) and
TORCH_NEURONX_LOG_FILE through Python's logging, for the Python layers and the C++ driver alike;
TORCH_NEURONX_ENABLE_STACK_TRACE=1 names the user's source line in warnings, errors and
fallback reports."""

import logging
import os
import sys

import pytest
import torch

from torch_neuronx.runtime import env, log

HERE = os.path.abspath(__file__)


@pytest.fixture
def configure(tmp_path):
    """configure(level=..., stack_trace=...) -> path of the log file; restored afterwards."""
    path = tmp_path / "neuron.log"

    def apply(level=None, stack_trace=False):
        environ = {"TORCH_NEURONX_LOG_FILE": str(path)}
        if level is not None:
            environ["TORCH_NEURONX_LOG_LEVEL"] = str(level)
        if stack_trace:
            environ["TORCH_NEURONX_ENABLE_STACK_TRACE"] = "1"
        log.configure(environ)
        return path

    yield apply
    log.configure()


def _lines(path):
    logging.getLogger("torch_neuronx").handlers[0].flush()
    return path.read_text().splitlines() if path.exists() else []


def _new_kernel_plan(n):
    """A signature the driver has not planned yet: its plan is compiled (a DEBUG line)."""
    x = torch.ones(3, 1000 + n, device="neuron")
    torch.testing.assert_close((x * 3).cpu(), torch.full((3, 1000 + n), 3.0))


@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_level_filters_python_and_driver_lines(configure, level):
    path = configure(level)
    assert log.level() == level
    assert logging.getLogger("torch_neuronx").level == log.LEVELS[level]
    log.logger("compile").info("python info line %d", level)
    log.logger("eager").warning("python warning line %d", level)
    _new_kernel_plan(level)
    lines = _lines(path)
    assert any("python warning line" in line for line in lines) == (level >= 1)
    assert any("python info line" in line for line in lines) == (level >= 2)
    driver_debug = [
        line for line in lines if line.startswith("[Neuron] [DEBUG] torch_neuronx.eager:")
    ]
    assert bool(driver_debug) == (level >= 3), lines


def test_default_level_is_warning_and_lines_have_torchneuron_format(configure):
    path = configure()
    assert log.level() == 1
    log.logger("distributed").warning("hello %s", "there")
    assert _lines(path) == ["[Neuron] [WARNING] torch_neuronx.distributed: hello there"]


def test_layer_loggers_share_the_root():
    for layer in ("runtime", "perf", "profiler", "eager", "compile", "distributed"):
        assert log.logger(layer).name == f"torch_neuronx.{layer}"
        assert log.logger(layer).parent is logging.getLogger("torch_neuronx")


@pytest.mark.parametrize("value", ["4", "-1", "debug"])
def test_bad_level_names_the_variable(value):
    with pytest.raises(env.EnvError, match="TORCH_NEURONX_LOG_LEVEL"):
        log.configure({"TORCH_NEURONX_LOG_LEVEL": value})
    log.configure()


def test_stack_trace_names_the_user_line_in_device_errors(configure):
    configure(stack_trace=True)
    a = torch.ones(4, device="neuron")
    b = torch.ones(4)
    line = sys._getframe().f_lineno + 2
    with pytest.raises(RuntimeError) as err:
        a + b  # noqa: B018  (a CPU tensor with data: the device-mismatch error)
    assert "Expected all tensors to be on the same device" in str(err.value)
    assert f"{HERE}:{line}" in str(err.value)


def test_without_stack_trace_errors_name_no_line(configure):
    configure(stack_trace=False)
    with pytest.raises(RuntimeError) as err:
        torch.ones(4, device="neuron") + torch.ones(4)
    assert HERE not in str(err.value)


def test_user_source_is_the_callers_line():
    line = sys._getframe().f_lineno + 1
    assert log.user_source() == f"{HERE}:{line} in test_user_source_is_the_callers_line"


def test_stack_trace_names_the_line_of_a_fallback_op(py, tmp_path):
    logfile = tmp_path / "child.log"
    py(
        f"""
        import warnings, torch, torch_neuronx
        a = torch.randn(5, 5)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            q, r = torch.linalg.qr(a.to("neuron"))  # line 6 of this script
        torch.testing.assert_close((q @ r).cpu(), a, atol=1e-4, rtol=1e-4)
        msgs = [str(w.message) for w in caught if "CPU fallback" in str(w.message)]
        assert msgs, [str(w.message) for w in caught]
        assert f"{{__file__}}:6 in <module>" in msgs[0], msgs[0]
        lines = open({str(logfile)!r}).read()
        assert "[Neuron] [INFO] torch_neuronx.eager:" in lines and f"{{__file__}}:6" in lines, lines
        assert torch_neuronx.get_fallback_sources()["aten::linalg_qr"] == [
            f"{{__file__}}:6 in <module>"]
    """,
        env={
            "TORCH_NEURONX_ENABLE_STACK_TRACE": "1",
            "TORCH_NEURONX_LOG_LEVEL": "2",
            "TORCH_NEURONX_LOG_FILE": str(logfile),
        },
    )
