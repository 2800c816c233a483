"""Per-op facts of the op policy table beyond the status: engine, mixed devices, data movement,
metadata-only ops (issue 9, point 4), and the driver acting on the facts pushed to it."""

import warnings

import torch

from torch_neuronx.eager import op_policy
from torch_neuronx.runtime.engines import Engine
from torch_neuronx.testing import child


def test_engine_per_op_group():
    assert op_policy.engine_for("aten::mm") is Engine.tensor
    assert op_policy.engine_for("aten::convolution") is Engine.tensor
    assert (
        op_policy.engine_for("aten::_scaled_dot_product_flash_attention_for_cpu") is Engine.tensor
    )
    assert op_policy.engine_for("aten::add.Tensor") is Engine.vector
    assert op_policy.engine_for("aten::add_.Tensor") is Engine.vector  # in-place: the functional's
    assert op_policy.engine_for("aten::exp") is Engine.scalar
    assert op_policy.engine_for("aten::sum.dim_IntList") is Engine.vector
    assert op_policy.engine_for("aten::max_pool2d_with_indices") is Engine.vector
    assert op_policy.engine_for("aten::gather") is Engine.gpsimd
    assert op_policy.engine_for("aten::_to_copy") is Engine.dma
    assert op_policy.engine_for("_c10d_functional::all_reduce") is Engine.collective
    # not on the NeuronCore: CPU fallbacks run on the host; unsupported and custom ops have none
    assert op_policy.engine_for("aten::linalg_qr") is Engine.host
    assert op_policy.engine_for("aten::some_future_op") is Engine.host
    assert op_policy.engine_for("aten::to_sparse") is None
    assert op_policy.engine_for("mylib::custom") is None


def test_every_listed_op_has_an_engine_matching_its_status():
    for name, (status, _) in op_policy.TABLE.items():
        engine = op_policy.engine_for(name)
        if status == op_policy.NATIVE:
            assert engine in op_policy.ENGINES and engine is not Engine.host, name
        elif status == op_policy.FALLBACK:
            assert engine is Engine.host, name
        else:
            assert engine is None, name


def test_metadata_only_ops():
    assert op_policy.is_metadata_only("aten::sym_size.int")
    assert op_policy.is_metadata_only("aten::_assert_async.msg")
    assert not op_policy.is_metadata_only("aten::size")  # not in the table: a real op
    assert not op_policy.is_metadata_only("aten::mm")


def test_driver_acts_on_mixed_device_fact():
    # indexing accepts CPU indices (MIXED_DEVICE_OK); arithmetic does not
    x = torch.arange(6.0)
    d = x.to("neuron")
    idx = torch.tensor([4, 1])
    assert "aten::index" in op_policy.MIXED_DEVICE_OK
    assert torch.equal(d[idx].cpu(), x[idx])
    assert "aten::add" not in op_policy.MIXED_DEVICE_OK
    try:
        d + x
    except RuntimeError as e:
        assert "Expected all tensors to be on the same device" in str(e) and "aten::add" in str(e)
    else:
        raise AssertionError("neuron + non-scalar CPU tensor did not raise")


def test_driver_acts_on_data_movement_fact():
    # float64 data movement keeps every bit; float64 arithmetic runs in float32
    x = torch.tensor([1.0 + 2**-50], dtype=torch.float64)
    d = x.to("neuron")
    assert "aten::clone" in op_policy.DATA_MOVEMENT and "aten::mul" not in op_policy.DATA_MOVEMENT
    assert torch.equal(d.clone().cpu(), x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the once-per-process float64 warning
        product = (d * 1.0).cpu()
    assert product.dtype == torch.float64
    assert torch.equal(product, x.float().double())


def test_plan_cache_bound_is_validated_at_import():
    result = child.run("import torch", env={"NEURON_COMPILATION_CACHE_MAX_ENTRIES": "many"})
    assert result.returncode != 0
    assert "NEURON_COMPILATION_CACHE_MAX_ENTRIES='many' is not an integer" in result.stderr
