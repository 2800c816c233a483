"""Compiled graphs over memory layouts: torch.compile(backend="neuron") against CPU eager.

A compiled graph sees its inputs' strides (Dynamo guards on them and traces with them), so a
layout the graph mishandles gives a wrong result only for that layout (issue 26). Each function
runs with every input in each layout of torch_neuronx/testing/layouts.py, moved to the device
with its sizes, strides and storage offset; the result must match CPU eager on the same
transformed inputs: values within float32 tolerance, and, where CPU eager's output strides
follow the inputs' (pointwise ops, a channels_last convolution), the same strides. In-place
updates of an input must reach the caller's tensor in its layout; on an expanded input (whose
elements overlap) they must raise, as in eager.
"""

from __future__ import annotations

import zlib

import pytest
import torch
import torch.nn.functional as F

from torch_neuronx.runtime import env
from torch_neuronx.testing.layouts import LAYOUT_NAMES, apply_layout, to_device_keeping_layout


def _pointwise(x, y):
    return (x * y + 1).relu() - y


def _reduction(x, y):
    return x.sum(1) + (x * y).amax(1)


def _matmul(x, y):
    return x.flatten(0, 2) @ y.flatten(0, 2).t()


def _conv(x, w):
    return F.conv2d(x, w, padding=1).relu()


def _inplace(x, y):
    x.mul_(2).add_(y)
    return x.sum()


FULL = env.flag("TORCH_NEURONX_TEST_FULL")

# name -> (function, input shapes, whether CPU eager's output strides follow the inputs')
CASES = {
    "pointwise": (_pointwise, [(2, 3, 4, 5), (2, 3, 4, 5)], True),
    "reduction": (_reduction, [(2, 3, 4, 5), (2, 3, 4, 5)], False),
    "matmul": (_matmul, [(2, 3, 4, 5), (2, 3, 4, 5)], False),
    "conv": (_conv, [(2, 3, 6, 6), (4, 3, 3, 3)], True),
    "inplace": (_inplace, [(2, 3, 4, 5), (2, 3, 4, 5)], False),
}


def _in_ci_sample(case: str, layout: str) -> bool:
    """CI runs about one (case, layout) pair in 3, chosen by a stable hash (each compile costs
    seconds); TORCH_NEURONX_TEST_FULL=1 (make test-full) runs every pair."""
    return FULL or zlib.crc32(f"{case}|{layout}".encode()) % 3 == 0


_PAIRS = [
    pytest.param(case, layout, id=f"{case}-{layout}")
    for case in CASES
    for layout in LAYOUT_NAMES
    if _in_ci_sample(case, layout)
]


def _inputs(shapes, layout):
    g = torch.Generator().manual_seed(0)
    return [apply_layout(torch.randn(s, generator=g), layout) for s in shapes]


@pytest.mark.parametrize("case,layout", _PAIRS)
def test_compiled_graph_matches_cpu_eager_in_layout(case, layout, device):
    fn, shapes, strides_follow_inputs = CASES[case]
    cpu_in = _inputs(shapes, layout)
    dev_in = [to_device_keeping_layout(t, device) for t in cpu_in]
    for c, d in zip(cpu_in, dev_in, strict=True):  # the layout reached the device
        assert (d.stride(), d.storage_offset()) == (c.stride(), c.storage_offset())
    compiled = torch.compile(fn, backend="neuron")
    if case == "inplace" and layout == "expanded":
        # writing to a tensor whose elements overlap raises in eager, compiled or not
        with pytest.raises(RuntimeError):
            fn(*cpu_in)
        with pytest.raises(RuntimeError):
            compiled(*dev_in)
        return
    expected = fn(*cpu_in)
    actual = compiled(*dev_in)
    assert actual.device.type == device.type
    torch.testing.assert_close(actual.cpu(), expected, rtol=1e-4, atol=1e-5)
    if strides_follow_inputs:
        assert actual.stride() == expected.stride(), (layout, actual.stride(), expected.stride())
    for c, d in zip(cpu_in, dev_in, strict=True):  # mutated inputs, in their layout
        assert d.stride() == c.stride()
        torch.testing.assert_close(d.cpu(), c, rtol=1e-4, atol=1e-5)


def test_channels_last_conv_keeps_channels_last(device):
    """The case issue 26 is about, stated directly: a channels_last convolution compiled for
    neuron returns channels_last, as CPU eager does."""
    x, w = _inputs([(2, 3, 6, 6), (4, 3, 3, 3)], "channels_last")
    out = torch.compile(_conv, backend="neuron")(to_device_keeping_layout(x, device), w.to(device))
    assert _conv(x, w).is_contiguous(memory_format=torch.channels_last)
    assert out.is_contiguous(memory_format=torch.channels_last)


def _conv1x1_upsample(x, w):
    # an unstrided 1x1 convolution of a batch under 16 runs CPU's slow 2d kernel on one
    # thread; the bilinear upsample's decomposition picks its output format from its input's
    return F.interpolate(F.conv2d(x, w), scale_factor=2, mode="bilinear").relu()


@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_one_thread_1x1_conv_layout_is_eagers(layout, device):
    """FakeTensor's convolution rule gives a neuron convolution eager's memory format also for
    the slow 2d kernel (timm's efficientformerv2_s0 under OMP_NUM_THREADS=1): the traced
    strides, the compiled output's and CPU eager's agree."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        x, w = _inputs([(2, 8, 5, 5), (16, 8, 1, 1)], layout)
        w = apply_layout(w, layout)
        dx, dw = to_device_keeping_layout(x, device), to_device_keeping_layout(w, device)
        eager = F.conv2d(dx, dw)
        assert eager.stride() == F.conv2d(x, w).stride()
        with FakeTensorMode(allow_non_fake_inputs=True) as mode:
            fake = F.conv2d(mode.from_tensor(dx), mode.from_tensor(dw))
        assert fake.stride() == eager.stride(), (fake.stride(), eager.stride())
        expected = _conv1x1_upsample(x, w)
        actual = torch.compile(_conv1x1_upsample, backend="neuron")(dx, dw)
        torch.testing.assert_close(actual.cpu(), expected, rtol=1e-4, atol=1e-5)
        assert actual.stride() == expected.stride(), (actual.stride(), expected.stride())
    finally:
        torch.set_num_threads(threads)
