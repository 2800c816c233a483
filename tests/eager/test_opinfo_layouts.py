"""The OpInfo harness's layout dimension (torch_neuronx/testing/opinfo/layouts.py) does what it
claims: a sample put in a layout reaches the device in that layout, the CI sample of layouts is
deterministic, and a device that ignores a layout (wrong output strides, no error on a write to
overlapping elements) fails the comparison. The sweep itself runs in tests/eager/test_opinfo.py.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from torch_neuronx.testing import opinfo as H

DEVICE = H.device_under_test()


def _sample(*args, **kwargs):
    H.load_op_db()  # makes torch.testing._internal importable (an expecttest stand-in)
    from torch.testing._internal.opinfo.core import SampleInput

    return SampleInput(*args, **kwargs)


def test_layout_sample_changes_geometry_not_values():
    x = torch.randn(2, 3, 4, 5)
    idx = torch.tensor([2, 0, 1])
    s = _sample(x, args=(x, idx), kwargs={"w": torch.randn(4, 5)})
    for name in ("channels_last", "permuted", "offset", "sliced"):
        m = H.layout_sample(s, name)
        assert m is not None
        assert m.input is m.args[0]  # one tensor object stays one
        assert torch.equal(m.input, x) and torch.equal(m.kwargs["w"], s.kwargs["w"])
        assert torch.equal(m.args[1], idx)
        assert (m.input.stride(), m.input.storage_offset()) != (x.stride(), 0)
        moved = H.clone_sample(m, DEVICE)
        for a, b in zip(H.iter_tensors(moved.args), H.iter_tensors(m.args), strict=True):
            assert (a.stride(), a.storage_offset()) == (b.stride(), b.storage_offset())
            assert a.device.type == torch.device(DEVICE).type


def test_expanded_spares_integer_arguments():
    """Repeating the first slice of an index or offsets tensor makes another input, not
    another layout (it made CPU's embedding_bag backward read uninitialised memory)."""
    x = torch.randn(5, 3)
    idx = torch.tensor([4, 0, 1])
    m = H.layout_sample(_sample(x, args=(idx,)), "expanded")
    assert m.input.stride() == (0, 1) and m.args[0] is idx


def test_layout_sample_keeps_grad_leaves_and_skips_what_it_cannot_change():
    x = torch.randn(3, 4, requires_grad=True)
    m = H.layout_sample(_sample(x), "permuted")
    assert m.input.requires_grad and m.input.is_leaf and m.input.stride() == (1, 3)
    # 0-dim and zero-size tensors have no other layout: the plain run covers them
    assert H.layout_sample(_sample(torch.tensor(1.5), args=(torch.empty(0, 3),)), "sliced") is None
    assert H.layout_sample(_sample(torch.randn(4)), "permuted") is None


def test_ci_layout_sample_is_deterministic_and_full_runs_every_layout():
    ops = H.load_op_db()
    ci = [tuple(H.CI_PLAN.layouts(op, "float32")) for op in ops]
    assert ci == [tuple(H.CI_PLAN.layouts(op, "float32")) for op in ops]
    chosen = sum(len(c) for c in ci)
    # about one (op, layout) pair in `layout_every`
    expected = len(ops) * len(H.LAYOUT_NAMES) / H.CI_PLAN.layout_every
    assert 0.7 * expected < chosen < 1.3 * expected
    assert all(H.CI_PLAN.layouts(op, "float64") == [] for op in ops[:50])
    assert H.FULL_PLAN.layouts(ops[0], "float64") == H.LAYOUT_NAMES


def test_run_op_category_runs_layout_variants():
    add = H.ops_by_key()["add"]
    plan = dataclasses.replace(H.CI_PLAN, layout_every=1, take=2)
    results = H.run_op_category(add, "float32", DEVICE, plan)
    by_layout = {r.layout for r in results if r.status == H.PASS}
    assert {"permuted", "sliced", "offset", "expanded"} <= by_layout
    failures = [r for r in results if r.status == H.FAIL]
    assert not failures, H.summarize_failures(failures)


@dataclasses.dataclass
class _FakeOp:
    """An op that is right on CPU and ignores layouts on the device."""

    name: str
    fn: object
    inplace_variant: object = None
    decorators: tuple = ()
    supports_out: bool = False

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)


def _clone_dense_on_device(x):
    return x.clone() if x.device.type == "cpu" else x.clone(memory_format=torch.contiguous_format)


def test_output_strides_are_compared_in_layout_variants():
    op = _FakeOp("layout_test_clone", _clone_dense_on_device)
    m = H.layout_sample(_sample(torch.randn(3, 4)), "permuted")
    if DEVICE == "cpu":  # the fake op is right on CPU
        assert H.check_forward(op, m, DEVICE, torch.float32, None, "permuted")[0] == H.PASS
        return
    status, kind, _ = H.check_forward(op, m, DEVICE, torch.float32, None, "permuted")
    assert (status, kind) == (H.FAIL, "stride")
    # the sample as OpInfo gives it compares strides of elementwise ops only
    assert H.check_forward(op, m, DEVICE, torch.float32, None, None)[0] == H.PASS
    H.STRIDES_DIFFER[op.name] = "test: strides legitimately differ"
    try:
        assert H.check_forward(op, m, DEVICE, torch.float32, None, "permuted")[0] == H.PASS
    finally:
        del H.STRIDES_DIFFER[op.name]


def test_write_to_overlapping_elements_must_raise_on_both():
    def add_(x):  # raises on CPU for an expanded x; the "device" writes a copy instead
        return x.add_(1) if x.device.type == "cpu" else x.clone().add_(1)

    op = _FakeOp("layout_test_add_", lambda x: x + 1, inplace_variant=add_)
    m = H.layout_sample(_sample(torch.randn(4, 3)), "expanded")
    assert H.has_internal_overlap(m.input)
    status, kind, reason = H.check_inplace(op, m, DEVICE, torch.float32, None, "expanded")
    if DEVICE == "cpu":
        assert status == H.PASS  # both raise the same error
    else:
        assert (status, kind) == (H.FAIL, "no-error"), reason
    real = _FakeOp("layout_test_add_", lambda x: x + 1, inplace_variant=torch.Tensor.add_)
    m = H.layout_sample(_sample(torch.randn(4, 3), args=(1.0,)), "expanded")
    assert H.check_inplace(real, m, DEVICE, torch.float32, None, "expanded")[0] == H.PASS


@pytest.mark.parametrize("layout", ["permuted", "sliced", "expanded"])
def test_out_tensors_take_the_layout(layout):
    """An out= tensor of the right shape keeps its strides; an overlapping one must raise."""
    mul = H.ops_by_key()["mul"]
    m = H.layout_sample(_sample(torch.randn(4, 3), args=(torch.randn(4, 3),)), "offset")
    assert H.check_out(mul, m, DEVICE, torch.float32, None, layout)[0] == H.PASS
    out = H.out_in_layout(torch.empty(4, 3), layout)
    assert H.has_internal_overlap(out) == (layout == "expanded")
