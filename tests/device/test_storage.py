"""Real device memory: storages, views, serialisation, copies (issue 2, point 2).

Copies and views move bytes and eager kernels are CPU kernels: comparisons are exact."""

import copy
import io

import torch

DEV = "neuron"


def test_real_storage():
    x = torch.randn(3, 5, device=DEV)
    assert x.data_ptr() != 0
    assert x.untyped_storage().nbytes() == 3 * 5 * 4
    assert x.untyped_storage().device == torch.device("neuron:0")
    assert x.is_neuron and not torch.ones(1).is_neuron


def test_views_share_storage_and_writes_land_in_base():
    base = torch.arange(12.0, device=DEV).reshape(3, 4)
    ref = torch.arange(12.0).reshape(3, 4)
    for b in (base, ref):
        t = b.t()
        t[1, 2] = -1.0
        s = b.as_strided((2, 2), (1, 4), 1)
        s.mul_(10)
        b[2].add_(100)
        v = b.view(-1)[::5]
        v.fill_(7)
    assert base.untyped_storage().data_ptr() == base.t().untyped_storage().data_ptr()
    torch.testing.assert_close(base.cpu(), ref, rtol=0, atol=0)


def test_zero_size_and_zero_dim():
    e = torch.empty(0, 3, device=DEV)
    assert e.shape == (0, 3) and e.cpu().shape == (0, 3)
    s = torch.tensor(2.5, device=DEV)
    assert s.dim() == 0 and s.item() == 2.5
    assert (s * 2).item() == 5.0
    assert torch.cat([e, torch.ones(1, 3, device=DEV)]).shape == (1, 3)


def test_save_load_roundtrip_keeps_view_sharing():
    a = torch.randn(4, 4, device=DEV)
    b = a[1:3]
    buf = io.BytesIO()
    torch.save({"a": a, "b": b}, buf)
    for loc, dev in ((None, "neuron:0"), ("cpu", "cpu"), ("neuron", "neuron:0")):
        buf.seek(0)
        d = torch.load(buf, map_location=loc)
        assert str(d["a"].device) == dev
        torch.testing.assert_close(d["a"].cpu(), a.cpu(), rtol=0, atol=0)
        d["a"][1, 0] = 123.0
        assert d["b"][0, 0].item() == 123.0  # still a view of the loaded base


def test_deepcopy_module_and_tensor():
    m = torch.nn.Linear(4, 3).neuron()
    m2 = copy.deepcopy(m)
    assert m2.weight.device.type == "neuron"
    assert m2.weight.data_ptr() != m.weight.data_ptr()
    torch.testing.assert_close(m2.weight.cpu(), m.weight.cpu(), rtol=0, atol=0)
    t = torch.randn(3, device=DEV)
    t2 = copy.deepcopy(t)
    t2.add_(1)
    torch.testing.assert_close(t2.cpu(), t.cpu() + 1, rtol=0, atol=0)


def test_tensor_and_module_methods():
    x = torch.ones(2).neuron()
    assert x.device.type == "neuron"
    assert torch.ones(2).neuron(1).device == torch.device("neuron:1")
    m = torch.nn.Linear(2, 2).neuron()
    assert next(m.parameters()).is_neuron


def test_non_blocking_copies_both_ways():
    src = torch.randn(1000)
    d = src.to(DEV, non_blocking=True)
    back = d.to("cpu", non_blocking=True)
    torch.neuron.synchronize()
    torch.testing.assert_close(back, src, rtol=0, atol=0)


def test_copies_allocate_no_temporaries():
    torch.neuron.synchronize()
    src = torch.randn(256, 256)
    before = torch.neuron.memory_stats()["allocation.all.allocated"]
    d = src.to(DEV)  # exactly one device allocation: the destination
    assert torch.neuron.memory_stats()["allocation.all.allocated"] - before == 1
    before = torch.neuron.memory_stats()["allocation.all.allocated"]
    host = torch.empty(256, 256)
    host.copy_(d)  # device -> host into an existing buffer: no device allocation
    assert torch.neuron.memory_stats()["allocation.all.allocated"] == before
    torch.testing.assert_close(host, src, rtol=0, atol=0)


def test_cross_device_copy():
    a = torch.randn(5, device="neuron:0")
    b = a.to("neuron:1")
    assert b.device == torch.device("neuron:1")
    torch.testing.assert_close(b.cpu(), a.cpu(), rtol=0, atol=0)


def test_dtype_conversions_keep_float64_bits():
    x = torch.tensor([1.0 + 2**-40, 3.141592653589793], dtype=torch.float64)
    assert torch.equal(x.to(DEV).cpu(), x)
    assert x.to(DEV).to(torch.float32).cpu().dtype == torch.float32


def test_lazy_clone_copies_at_once():
    """torch._lazy_clone (PyTorch's copy-on-write clone) on device memory: the clone is made at
    once (docs/decisions.md), with the same values and its own storage; both sides' memory is
    returned when they are gone. Before, it hung on an uninitialized tensor and raised an
    internal error on others."""
    torch.neuron.synchronize()
    before = torch.neuron.memory_allocated()
    for x in (torch.arange(1024.0, device="neuron"), torch.empty(4, device="neuron")):
        want = x.cpu()
        y = torch._lazy_clone(x)
        assert y.device == x.device and y.data_ptr() != x.data_ptr()
        assert torch.equal(y.cpu(), want)
        y.add_(1)
        assert torch.equal(x.cpu(), want) and torch.equal(y.cpu(), want + 1)
        del x, y
    assert torch.neuron.memory_allocated() == before
