"""Op policy, tracking, strict mode, kernel plan cache, dtype policy (issue 3, points 2-4, 6)."""

import pytest
import torch

import torch_neuronx
from torch_neuronx.eager import op_policy


def test_policy_table_classifies():
    assert op_policy.policy_for("aten::mm")[0] == "native"
    assert op_policy.policy_for("aten::add_.Tensor")[0] == "native"
    assert op_policy.policy_for("aten::linalg_qr")[0] == "fallback"
    status, reason = op_policy.policy_for("aten::some_future_op")
    assert status == "fallback" and "CPU fallback" in reason
    assert op_policy.policy_for("aten::to_sparse")[0] == "unsupported"
    rows = op_policy.compatibility_rows()
    assert len(rows) > 1500 and {r["status"] for r in rows} == {"native", "fallback", "unsupported"}


def test_fallback_runs_correctly_warns_once_and_is_tracked(py):
    py("""
        import warnings, torch, torch_neuronx
        a = torch.randn(4, 4)
        torch_neuronx.clear_op_tracking()
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter('always')
            q1, r1 = torch.linalg.qr(a.to('neuron'))
            q2, r2 = torch.linalg.qr(a.to('neuron'))
        msgs = [str(m.message) for m in w if 'CPU fallback' in str(m.message)]
        assert len(msgs) == 1, msgs
        assert msgs[0].startswith("Operator 'aten::linalg_qr' executed via CPU fallback"), msgs[0]
        qc, rc = torch.linalg.qr(a)
        assert q1.device.type == 'neuron' and r1.device.type == 'neuron'
        # the fallback runs the CPU kernel: the same bits
        torch.testing.assert_close(q1.cpu(), qc, rtol=0, atol=0)
        torch.testing.assert_close(r1.cpu(), rc, rtol=0, atol=0)
        assert 'aten::linalg_qr' in torch_neuronx.get_fallback_ops()
        assert 'aten::linalg_qr' not in torch_neuronx.get_executed_ops()
        """)


def test_executed_ops_and_clear():
    torch_neuronx.clear_op_tracking()
    x = torch.randn(3, 3, device="neuron")
    (x @ x).relu_()
    ops = torch_neuronx.get_executed_ops()
    assert "aten::mm" in ops and "aten::relu_" in ops
    assert "aten::mm" not in torch_neuronx.get_fallback_ops()
    torch_neuronx.clear_op_tracking()
    assert torch_neuronx.get_executed_ops() == [] and torch_neuronx.get_fallback_ops() == []


def test_strict_mode_turns_fallback_into_error(py):
    py(
        """
        import torch
        x = torch.randn(3, 3, device='neuron')
        y = (x @ x).sum()              # native ops are fine
        try:
            torch.linalg.qr(x)
        except RuntimeError as e:
            assert 'aten::linalg_qr' in str(e) and 'TORCH_NEURONX_STRICT' in str(e), e
        else:
            raise AssertionError('a CPU fallback ran in strict mode')
        """,
        env={"TORCH_NEURONX_STRICT": "1"},
    )


def test_plan_cache_hits_and_misses():
    m = torch_neuronx.metrics
    x = torch.randn(7, 3, device="neuron")
    x + x  # make sure the plan exists
    misses = m.get_counter_value("CompilationCache.InMemoryMisses")
    hits = m.get_counter_value("CompilationCache.InMemoryHits")
    for _ in range(5):
        x + x
    assert m.get_counter_value("CompilationCache.InMemoryMisses") == misses
    assert m.get_counter_value("CompilationCache.InMemoryHits") >= hits + 5
    torch.randn(11, 13, device="neuron") + 1.5  # a new signature compiles a new plan
    assert m.get_counter_value("CompilationCache.InMemoryMisses") > misses
    names = m.get_counter_names()
    for n in (
        "CompilationCache.InMemoryHits",
        "CompilationCache.InMemoryMisses",
        "CompilationCache.CompileTimeNs",
        "CompilationCache.Entries",
    ):
        assert n in names


def test_plan_cache_bound(py):
    py(
        """
        import torch, torch_neuronx
        for n in range(1, 40):
            torch.ones(n, device='neuron') + 1
        entries = torch_neuronx.metrics.get_counter_value('CompilationCache.Entries')
        evictions = torch_neuronx.metrics.get_counter_value('CompilationCache.Evictions')
        assert entries <= 10, entries
        assert evictions > 0, evictions
        """,
        env={"NEURON_COMPILATION_CACHE_MAX_ENTRIES": "10"},
    )


def test_remembered_plans_are_forgotten_when_the_plan_cache_is_emptied(py):
    # Each thread remembers the plans it found last (csrc/eager/op_table.cpp); once the cache
    # is emptied, a remembered plan must not count as a hit.
    py(
        """
        import torch
        from torch_neuronx import metrics
        a = [torch.ones(n, device='neuron') for n in (1, 2, 3)]
        def count(name):
            return metrics.get_counter_value('CompilationCache.' + name)
        torch.neg(a[0])
        m = count('InMemoryMisses')
        torch.neg(a[0])  # a hit, now remembered
        assert count('InMemoryMisses') == m
        e = count('Evictions')
        torch.neg(a[1]); torch.neg(a[2])  # a cache of 2 entries is emptied on the way
        assert count('Evictions') > e
        m = count('InMemoryMisses')
        torch.neg(a[0])
        assert count('InMemoryMisses') == m + 1, 'a plan of the emptied cache counted as a hit'
        """,
        env={"NEURON_COMPILATION_CACHE_MAX_ENTRIES": "2"},
    )


def test_float64_lives_on_device_bit_exact():
    x = torch.tensor([1.0 + 2**-50, -3.25e-300], dtype=torch.float64)
    d = x.to("neuron")
    assert d.dtype == torch.float64 and torch.equal(d.cpu(), x)
    assert torch.equal(d.clone().cpu(), x)
    assert torch.equal(torch.cat([d, d]).cpu(), torch.cat([x, x]))


def test_float64_inplace_writes_back():
    d = torch.ones(3, dtype=torch.float64, device="neuron")
    d.mul_(2.5)
    assert d.dtype == torch.float64 and torch.equal(
        d.cpu(), torch.full((3,), 2.5, dtype=torch.float64)
    )
    src = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, device="neuron")
    before = src.cpu().clone()
    _ = src * 3  # inputs that are only read are not rewritten
    assert torch.equal(src.cpu(), before)


def test_sparse_and_nested_errors():
    with pytest.raises(NotImplementedError, match=r"torch\.sparse"):
        torch.ones(2, 2, device="neuron").to_sparse()
    with pytest.raises(
        NotImplementedError,
        match=r"\(torch\.nested\) are not supported on the "
        r"neuron device\. Pad the sequences",
    ):
        torch.nested.nested_tensor([torch.ones(2), torch.ones(3)], device="neuron")


def test_torch_func_and_distributions_warn_and_compute(py):
    py("""
        import warnings, torch
        x = torch.randn(5, device='neuron')
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter('always')
            g = torch.func.grad(lambda t: (t * t).sum())(x)
            v = torch.vmap(torch.sin)(x)
            d = torch.distributions.Normal(torch.zeros(2, device='neuron'),
                                           torch.ones(2, device='neuron'))
            lp = d.log_prob(torch.zeros(2, device='neuron'))
        func = [str(m.message) for m in w if 'torch.func' in str(m.message)]
        dist = [str(m.message) for m in w if 'torch.distributions' in str(m.message)]
        assert len(func) == 1, func
        assert len(dist) == 1, dist
        # eager kernels are CPU kernels: the same bits as on CPU
        xc = x.cpu()
        g_cpu = torch.func.grad(lambda t: (t * t).sum())(xc)
        lp_cpu = torch.distributions.Normal(0., 1.).log_prob(torch.zeros(2))
        torch.testing.assert_close(g.cpu(), g_cpu, rtol=0, atol=0)
        torch.testing.assert_close(v.cpu(), xc.sin(), rtol=0, atol=0)
        torch.testing.assert_close(lp.cpu(), lp_cpu, rtol=0, atol=0)
        """)


def test_torch_func_is_an_error_when_strict(py):
    py(
        """
        import torch
        x = torch.randn(5, device='neuron')
        cases = (('torch.func', lambda: torch.func.grad(lambda t: (t * t).sum())(x)),
                 ('torch.distributions', lambda: torch.distributions.Normal(x, x.abs() + 1)))
        for name, f in cases:
            try:
                f()
            except RuntimeError as e:
                assert name in str(e) and 'TORCH_NEURONX_STRICT' in str(e), e
            else:
                raise AssertionError(f'{name} ran on neuron in strict mode')
        """,
        env={"TORCH_NEURONX_STRICT": "1"},
    )


def test_fft_policy_documented():
    assert op_policy.policy_for("aten::_fft_r2c")[0] == "native"
    x = torch.randn(16)
    got = torch.fft.rfft(x.to("neuron")).cpu()
    torch.testing.assert_close(got, torch.fft.rfft(x), rtol=0, atol=0)


# --- data-dependent ops: one list, read by both evaluate modes (issue 27, item 3) ------------
def test_data_dependent_ops_are_real_device_kernels():
    """Every entry reaches the device kernel as itself (no CompositeImplicitAutograd kernel
    that would decompose it first), so the measured and the fake mode both see it."""
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    known = {n.split(".", 1)[0] for n in torch._C._dispatch_get_all_op_names()}
    for name in op_policy.DATA_DEPENDENT:
        assert name in known, name
        overloads = [n for n in torch._C._dispatch_get_all_op_names() if n.split(".", 1)[0] == name]
        assert any(not has(o, "CompositeImplicitAutograd") for o in overloads), name
    assert op_policy.is_data_dependent("aten::nonzero")
    assert op_policy.is_data_dependent("aten::repeat_interleave.Tensor")
    assert op_policy.is_data_dependent("aten::_unique2.out")
    assert not op_policy.is_data_dependent("aten::nonzero_static")
    assert not op_policy.is_data_dependent("aten::add.Tensor")


def test_one_data_dependent_list_for_both_evaluate_modes():
    import ast
    from pathlib import Path

    from torch_neuronx.evaluate import collector, fake

    # both modes ask the op policy ...
    assert collector.is_data_dependent is op_policy.is_data_dependent
    assert fake.is_data_dependent is op_policy.is_data_dependent
    # ... and no module keeps a list of its own: a collection literal naming two or more
    # data-dependent ops ("aten::nonzero", "nonzero") anywhere else in the package fails
    bare = {n.split("::", 1)[1] for n in op_policy.DATA_DEPENDENT}
    pkg = Path(op_policy.__file__).resolve().parents[1]
    bad = []
    for f in sorted(pkg.rglob("*.py")):
        if f == Path(op_policy.__file__).resolve():
            continue
        for node in ast.walk(ast.parse(f.read_text(), str(f))):
            if isinstance(node, (ast.Set, ast.List, ast.Tuple)):
                names = {
                    e.value.split("::", 1)[-1]
                    for e in node.elts
                    if isinstance(e, ast.Constant) and isinstance(e.value, str)
                }
                if len(names & bare) >= 2:
                    bad.append(f"{f.relative_to(pkg)}:{node.lineno}")
    assert not bad, "second list of data-dependent ops: " + ", ".join(bad)
