"""A neuron tensor should be the sole owner of its storage, as a CPU tensor is: PyTorch reads
`storage().use_count() == 1` as "nobody else sees these bytes" (autograd's InputBuffer then
accumulates a gradient in place, `old_var.add_(var)`, instead of allocating `old_var + var`).

The host alias a neuron tensor caches on itself (csrc/runtime/host_alias.cpp, `CachedAlias`)
held a reference to the neuron storage, so any tensor an op had read or written through its
alias counted two owners. Found on timm's nextvit_small
(2026-12-03): with the fast path's aliases, autograd accumulated one gradient out of place on
neuron and in place on CPU; the two results have different strides in their size-1 dims
(768, 1, 1, 1) vs (768, 1, 768, 768), CPU's batch-norm backward then took another kernel, and
the step-0 weight gradients differed from CPU's by 1 ulp (bitwise equal with
TORCH_NEURONX_EAGER_FAST_PATH=0). Every multi-consumer gradient also costs an extra allocation
on neuron. Now the alias co-owns the device memory block (allocator.h, share_device_memory)
or the host storage the neuron storage adopted, not the neuron StorageImpl."""

import pytest
import torch

import torch_neuronx  # noqa: F401


def _owners(t: torch.Tensor) -> int:
    return torch._C._storage_Use_Count(t.untyped_storage()._cdata) - 1  # less this call's


def test_a_cpu_tensor_owns_its_storage_alone():
    assert _owners(torch.randn(4, 4) + 1) == 1  # the reference the test holds to be true


@pytest.mark.parametrize(
    "make",
    [
        lambda: torch.randn(4, 4).to("neuron"),  # a copy to the device caches a host alias
        lambda: torch.randn(4, 4, device="neuron"),
        lambda: torch.randn(2, 3, 4, 4, device="neuron").contiguous(
            memory_format=torch.channels_last
        ),
        lambda: torch.randn(4, 4, device="neuron") + 1,  # an op's output (adopted host bytes)
    ],
    ids=["to", "randn", "channels_last", "add"],
)
def test_a_neuron_tensor_owns_its_storage_alone(make):
    x = make()
    assert _owners(x) == 1


def test_its_alias_keeps_the_bytes_alive_after_it():
    # an alias that outlives the neuron tensor (a CPU view a kernel returned) still reads them
    from torch_neuronx import _C

    x = torch.arange(16.0, device="neuron")
    alias = _C._host_alias(x) if hasattr(_C, "_host_alias") else None
    if alias is None:
        pytest.skip("the driver does not expose host_alias to Python")
    del x
    reuse = torch.zeros(16, device="neuron")  # would take the block if it had gone back
    assert torch.equal(alias, torch.arange(16.0))
    assert reuse.sum().item() == 0


def test_gradients_accumulate_in_place_as_on_cpu():
    # `z` gets the residual add's gradient (out's), then the branch's: autograd adds the second
    # into the first in place when it owns it alone, as on CPU (no new allocation)
    in_place = {}
    for dev in ("cpu", "neuron"):
        torch.manual_seed(0)
        x = torch.randn(2, 8, 4, 4).to(dev).requires_grad_()
        w = torch.randn(8, 8, 1, 1).to(dev)
        z = x * 2
        ptrs = {}
        z.register_hook(lambda g, ptrs=ptrs: ptrs.__setitem__("z", g.data_ptr()))
        out = z + torch.nn.functional.conv2d(z, w)
        out.register_hook(lambda g, ptrs=ptrs: ptrs.__setitem__("out", g.data_ptr()))
        (out * 3).sum().backward()
        in_place[dev] = ptrs["z"] == ptrs["out"]
    assert in_place == {"cpu": True, "neuron": True}
