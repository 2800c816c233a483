"""Differential OpInfo tests: every op in PyTorch's ``op_db`` on neuron against CPU.

One test per (OpInfo, category); categories are ``float32`` (functional, in-place and
``out=`` variants), ``grad`` (float32 input gradients), ``bfloat16`` (functional and
in-place), ``integer`` (integer and bool dtypes, functional and in-place), and the 64-bit
``float64`` / ``complex128`` (functional, in-place, ``out=``) and ``grad64`` (their input
gradients): CPU's dtype and shape exactly, values within float32-level tolerance
(docs/eager.md); plus ``test_module``: RNN/LSTM/GRU, attention and Transformer modules from
``module_db``.

By default a deterministic sample runs (every op and category, a stable subset of the
samples, three integer dtypes per op, and for about one (op, category, layout) in 5 of the
float32 and grad categories two samples again in a memory layout: docs/coverage.md, "Memory
layouts"). ``TORCH_NEURONX_TEST_FULL=1`` (``make test-full``)
runs every sample of every supported dtype. The shared logic lives in
``torch_neuronx/testing/opinfo/``; ``python -m torch_neuronx.tools.coverage_sweep`` runs
the full sweep and writes ``docs/coverage.md``.

``TORCH_NEURONX_OPINFO_DEVICE=cpu`` runs the harness CPU against CPU (a self-check).
"""

from __future__ import annotations

import pytest
import torch

from torch_neuronx.runtime import env
from torch_neuronx.testing import opinfo as H

DEVICE = H.device_under_test()
PLAN = H.plan_from_env()

_OPS = H.load_op_db()
# (op, category) pairs whose category has a CPU dtype (the others have nothing to test)
_PARAMS = [
    pytest.param(i, cat, id=f"{H.op_key(op)}-{cat}")
    for i, op in enumerate(_OPS)
    for cat in H.CATEGORIES
    if H.category_dtypes(op, cat)
]


@pytest.mark.parametrize("op_index,category", _PARAMS)
def test_opinfo(op_index, category):
    op = _OPS[op_index]
    key = H.op_key(op)
    crash = H.KNOWN_CRASHES.get(key, {}).get(category)
    if crash and DEVICE != "cpu" and not env.flag("TORCH_NEURONX_OPINFO_RUN_CRASHERS"):
        pytest.xfail(f"known crash, not run (TORCH_NEURONX_OPINFO_RUN_CRASHERS=1 runs it): {crash}")
    results = H.run_op_category(op, category, DEVICE, PLAN)
    failures = [r for r in results if r.status == H.FAIL]
    compared = [r for r in results if r.status in (H.PASS, H.FAIL)]
    if not compared:
        reasons = sorted({f"{r.status}: {r.reason}" for r in results})
        if any(r.status == H.UNSUPPORTED for r in results):
            pytest.skip(
                f"{key} [{category}] is unsupported on neuron by policy: "
                + "; ".join(reasons)[:300]
            )
        pytest.skip(
            f"no sample of {key} [{category}] is comparable: "
            + ("; ".join(reasons)[:300] or "no samples")
        )
    if failures:
        known = H.KNOWN_FAILURES.get(key, {}).get(category) if DEVICE != "cpu" else None
        msg = (
            f"{len(failures)}/{len(compared)} samples of {key} [{category}] differ "
            f"from CPU on {DEVICE}:\n{H.summarize_failures(failures)}"
        )
        if known:
            pytest.xfail(f"known failure: {known}\n{msg}")
        pytest.fail(msg, pytrace=False)


_MODULES = H.load_module_db()


@pytest.mark.parametrize("category", ["float32", "grad"])
@pytest.mark.parametrize("module_index", range(len(_MODULES)), ids=[m.name for m in _MODULES])
def test_module(module_index, category):
    """RNN/LSTM/GRU (and cells), MultiheadAttention and Transformer layers from
    common_modules.module_db: outputs, and input + parameter gradients, against CPU."""
    minfo = _MODULES[module_index]
    results = H.run_module(minfo, DEVICE, PLAN, category)
    failures = [r for r in results if r.status == H.FAIL]
    compared = [r for r in results if r.status in (H.PASS, H.FAIL)]
    if not compared:
        pytest.skip(
            f"no sample of {minfo.name} [{category}] is comparable: "
            + "; ".join(sorted({r.reason for r in results}))[:300]
        )
    if failures:
        msg = (
            f"{len(failures)}/{len(compared)} samples of {minfo.name} [{category}] "
            f"differ from CPU on {DEVICE}:\n{H.summarize_failures(failures)}"
        )
        known = (
            H.KNOWN_FAILURES.get(f"module:{minfo.name}", {}).get(category)
            if DEVICE != "cpu"
            else None
        )
        if known:
            pytest.xfail(f"known failure: {known}\n{msg}")
        pytest.fail(msg, pytrace=False)


def test_harness_preserves_layout():
    """clone_tensor keeps sizes, strides, storage offset and overlap."""
    dev = DEVICE
    base = torch.arange(24.0).reshape(4, 6)
    cases = [
        base,
        base.t(),
        base[1:, ::2],
        torch.arange(3.0).expand(4, 3),
        base.reshape(2, 3, 4).permute(2, 0, 1),
        torch.empty(0, 3),
        torch.tensor(5.0),
    ]
    for t in cases:
        c = H.clone_tensor(t, dev)
        assert c.device.type == torch.device(dev).type
        assert c.shape == t.shape and c.stride() == t.stride()
        assert c.storage_offset() == t.storage_offset()
        assert c.dtype == t.dtype
        assert torch.equal(c.cpu(), t)  # a copy: the same bits
    g = torch.randn(3, 2, requires_grad=True)
    c = H.clone_tensor(g.t(), dev)
    assert c.requires_grad and c.is_leaf and c.stride() == (1, 2)


def test_harness_detects_mismatch():
    """The comparison is not vacuous: wrong values, dtype, shape and device fail."""
    e = torch.ones(3)
    for bad, kind in [
        (torch.full((3,), 2.0), "values"),
        (torch.ones(3, dtype=torch.float64), "dtype"),
        (torch.ones(4), "shape"),
    ]:
        with pytest.raises(H.Mismatch) as info:
            H.compare(bad, e, device_type="cpu", atol=1e-5, rtol=1e-6, check_strides=False)
        assert info.value.kind == kind
    with pytest.raises(H.Mismatch) as info:
        H.compare(torch.ones(3), e, device_type="neuron", atol=1e-5, rtol=1e-6, check_strides=False)
    assert info.value.kind == "device"
    with pytest.raises(H.Mismatch) as info:
        H.compare(
            torch.ones(3, 2).t(),
            torch.ones(2, 3),
            device_type="cpu",
            atol=0,
            rtol=0,
            check_strides=True,
        )
    assert info.value.kind == "stride"


def test_harness_covers_64bit_dtypes():
    """float64 / complex128 are categories of their own, held to float32-level tolerance."""
    ops = H.ops_by_key()
    add = ops["add"]
    assert H.category_dtypes(add, "float64") == [torch.float64]
    assert H.category_dtypes(add, "complex128") == [torch.complex128]
    assert H.category_dtypes(add, "grad64") == [torch.float64, torch.complex128]
    for dt, narrow in ((torch.float64, torch.float32), (torch.complex128, torch.complex64)):
        assert H.tolerance(add, dt) == H.tolerance(add, narrow) == (1e-5, 1.3e-6)
    # an op's own float32 override widens its 64-bit tolerance too
    conv = ops["nn.functional.conv2d"]
    assert H.tolerance(conv, torch.float64) >= H.tolerance(conv, torch.float32)
    # a wrong 64-bit dtype is a mismatch even where values agree
    with pytest.raises(H.Mismatch) as info:
        H.compare(
            torch.ones(3, dtype=torch.complex64),
            torch.ones(3, dtype=torch.complex128),
            device_type="cpu",
            atol=1e-5,
            rtol=1e-6,
            check_strides=False,
        )
    assert info.value.kind == "dtype"
