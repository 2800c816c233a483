"""A CPU index tensor passed to `index_fill` on a neuron tensor (issue 13, point 9).

PyTorch's test_stable_sort_against_numpy calls `x.index_fill(dim, idx, v)` with x on the device
and a 1-dim CPU index. CUDA refuses that call ("Expected all tensors to be on the same device":
index_fill_ feeds the index to a TensorIterator that admits no CPU operand beside a device
tensor), and the test returns before that branch on CUDA; neuron refuses it the same way, with
the same message. A 0-dim CPU tensor is different: neuron reads 0-dim CPU tensors as values in
every op (as CUDA does for the binary ops' CPU scalars), so a 0-dim CPU index works and gives
CPU's result. docs/coverage.md lists the PyTorch tests as accelerator-consistent exclusions.
"""

import pytest
import torch

DEV = "neuron"


@pytest.mark.parametrize("dim", [0, 1])
def test_zero_dim_cpu_index_is_read(dim):
    x = torch.arange(12.0).reshape(3, 4)
    idx = torch.tensor(1)  # 0-dim, on CPU
    out = x.to(DEV).index_fill(dim, idx, 5.0)
    assert out.device.type == DEV
    assert torch.equal(out.cpu(), x.index_fill(dim, idx, 5.0))


@pytest.mark.parametrize("inplace", [False, True])
def test_one_dim_cpu_index_is_the_same_device_error(inplace):
    x = torch.arange(12.0).reshape(3, 4)
    d = x.to(DEV)
    idx = torch.tensor([0, 2])  # 1-dim, on CPU: what the PyTorch test builds
    call = d.index_fill_ if inplace else d.index_fill
    with pytest.raises(RuntimeError) as e:
        call(1, idx, 5.0)
    msg = str(e.value)
    assert "Expected all tensors to be on the same device" in msg
    assert "neuron:0" in msg and "cpu" in msg and "aten::index_fill_" in msg
    assert torch.equal(d.cpu(), x)  # nothing was written
    # the same index on the device works and gives CPU's result
    assert torch.equal(d.index_fill(1, idx.to(DEV), 5.0).cpu(), x.index_fill(1, idx, 5.0))
