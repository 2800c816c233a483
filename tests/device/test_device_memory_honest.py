"""Device memory means device tensors (issue 13, point 2).

Kernels run on the host CPU. What a kernel allocates while it runs (a type-promoting copy inside
a reduction, sort scratch, matmul packing, im2col buffers, index temporaries) is host workspace:
counted in ``memory_stats()``'s ``host_workspace.*`` keys, never against the emulated HBM. Only
the kernel's outputs become device memory. So ops on tensors close to the capacity succeed
whenever their results fit, and peaks after them are inputs + outputs, rounded to the
allocator's size classes.

Each test runs in a child interpreter with a 64 MiB core (TORCH_NEURONX_HBM_PER_CORE=64MiB).
"""

from __future__ import annotations

import textwrap

ENV = {"TORCH_NEURONX_HBM_PER_CORE": "64MiB"}

# The checks every child shares: `run(op, *inputs)` runs `op` on neuron and on CPU, compares the
# results, and checks that the device's allocated peak during the op was inputs + outputs.
PRELUDE = """
import torch
MiB = 1 << 20

def rounded(n):
    # The allocator's block size for an n-byte request (csrc/runtime/allocator_pool.h: round_size).
    if n == 0:
        return 0
    if n <= 256:
        return 256
    if n >= 16 * MiB:
        return (n + 511) // 512 * 512
    p = 1 << ((n - 1).bit_length() - 1)
    step = max(p // 4, 256)
    return (n + step - 1) // step * step

def outputs(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]

def run(op, *inputs, single_kernel=True):
    # single_kernel False: `op` is several ops (a composite, or Python code): its intermediates
    # are device tensors, so only the memory in use after it is checked, not the peak.
    cpu_inputs = [t.cpu() if isinstance(t, torch.Tensor) else t for t in inputs]
    torch.neuron.reset_peak_memory_stats()
    base = torch.neuron.memory_allocated()
    ws_before = torch.neuron.memory_stats()['host_workspace.allocated_bytes.current']
    got = outputs(op(*inputs))
    s = torch.neuron.memory_stats()
    fresh = {o.untyped_storage().data_ptr(): o.untyped_storage().nbytes() for o in got}
    want_peak = base + sum(rounded(n) for n in fresh.values())
    if single_kernel:
        assert s['allocated_bytes.all.peak'] == want_peak, (s['allocated_bytes.all.peak'], want_peak)
    assert s['allocated_bytes.all.current'] == want_peak
    assert s['reserved_bytes.all.current'] <= torch.neuron.get_device_properties(0).total_memory
    assert s['host_workspace.allocated_bytes.current'] == ws_before  # workspace is transient
    want = outputs(op(*cpu_inputs))
    for g, w in zip(got, want):
        assert g.device.type == 'neuron' and g.dtype == w.dtype and g.shape == w.shape
        torch.testing.assert_close(g.cpu(), w, rtol=1e-4, atol=1e-3)
    return got, s
"""


def test_reduction_with_a_promoting_temporary(py):
    py(
        PRELUDE
        + textwrap.dedent(
            """
        x = torch.randint(0, 255, (8 * MiB,), dtype=torch.uint8).neuron()
        (r,), s = run(torch.sum, x)           # the kernel's int64 copy is 64 MiB: host workspace
        assert r.dtype == torch.int64
        assert s['host_workspace.allocated_bytes.peak'] >= 64 * MiB, s
        assert s['num_ooms'] == 0
        y = torch.randint(-100, 100, (16 * MiB,), dtype=torch.int8).neuron()   # 16 of 64 MiB
        run(lambda t: t.sum(dim=0), y)     # a 128 MiB int64 temporary
        run(lambda t: t.view(1024, -1).prod(dim=1), y)
        run(lambda t: t.float().mean(), x[: 4 * MiB], single_kernel=False)
        assert torch.neuron.memory_stats()['num_ooms'] == 0
        """
        ),
        env=ENV,
    )


def test_sort_matmul_convolution_and_indexing_near_capacity(py):
    py(
        PRELUDE
        + textwrap.dedent(
            """
        g = torch.Generator().manual_seed(0)
        v = torch.randn(3_500_000, generator=g).neuron()             # 14 MiB in
        run(torch.sort, v)                                            # 14 + 28 MiB out
        run(lambda t: torch.topk(t, 1000), v)
        run(lambda t: torch.argsort(t, stable=True), v, single_kernel=False)  # sort, values dropped
        del v
        a = torch.randn(4096, 1024, generator=g).neuron()            # 16 MiB
        b = torch.randn(1024, 64, generator=g).neuron()
        run(torch.mm, a, b)
        run(lambda p, q: torch.nn.functional.linear(p, q.t()), a, b)
        del a, b
        x = torch.randn(8, 16, 96, 96, generator=g).neuron()         # 4.5 MiB in, im2col ~40 MiB
        w = torch.randn(16, 16, 3, 3, generator=g).neuron()
        run(lambda i, k: torch.nn.functional.conv2d(i, k, padding=1), x, w)
        del x, w
        t = torch.randn(12 * MiB // 4, generator=g).neuron()          # 12 MiB
        idx = torch.randint(0, t.numel(), (MiB,), generator=g).neuron()
        run(lambda s, i: s[i], t, idx)
        run(lambda s, m: s[m], t, t > 1.5)                                   # nonzero temporaries
        ones = torch.ones(MiB).neuron()
        run(lambda s, i, v: s.index_put((i,), v, accumulate=True), t, idx, ones)
        run(lambda s: torch.unique(s[:100_000]), t)
        assert torch.neuron.memory_stats()['num_ooms'] == 0
        """
        ),
        env=ENV,
    )


def test_outputs_that_do_not_fit_still_raise_device_oom(py):
    py(
        PRELUDE
        + textwrap.dedent(
            """
        x = torch.randint(0, 255, (8 * MiB,), dtype=torch.uint8).neuron()
        before = torch.neuron.memory_allocated()
        try:
            x.to(torch.int64)                    # a 64 MiB result beside an 8 MiB input
        except torch.OutOfMemoryError as e:
            assert 'neuron:0 out of memory' in str(e) and '64.00 MiB' in str(e), str(e)
        else:
            raise AssertionError('a 64 MiB result on a 64 MiB core with 8 MiB in use fit')
        s = torch.neuron.memory_stats()
        assert s['num_ooms'] == 1 and s['allocated_bytes.all.current'] == before
        assert s['host_workspace.allocated_bytes.current'] == 0, s
        run(lambda t: t[: 2 * MiB].to(torch.int64), x)   # 16 MiB fits
        """
        ),
        env=ENV,
    )


def test_workspace_statistics_and_cache(py):
    py(
        PRELUDE
        + textwrap.dedent(
            """
        x = torch.randint(0, 255, (8 * MiB,), dtype=torch.uint8).neuron()
        x.sum()
        s = torch.neuron.memory_stats()
        for k in ('allocated_bytes', 'reserved_bytes', 'allocation'):
            for f in ('current', 'peak', 'allocated', 'freed'):
                assert f'host_workspace.{k}.{f}' in s
        nested = torch.neuron.memory_stats_as_nested_dict()['host_workspace']
        assert nested['allocated_bytes']['peak'] >= 64 * MiB
        assert s['host_workspace.reserved_bytes.current'] >= 64 * MiB   # cached host memory
        torch.neuron.empty_cache()                                        # releases it too
        s = torch.neuron.memory_stats()
        assert s['host_workspace.reserved_bytes.current'] == 0, s
        torch.neuron.reset_peak_memory_stats()
        s = torch.neuron.memory_stats()
        assert s['host_workspace.allocated_bytes.peak'] == s['host_workspace.allocated_bytes.current']
        # A snapshot's segments add up to the reserved memory, adopted outputs included.
        y = x + 1
        snap = torch.neuron.memory_snapshot()
        total = sum(seg['total_size'] for seg in snap if seg['device'] == 0)
        assert total == torch.neuron.memory_reserved(), (total, torch.neuron.memory_reserved())
        """
        ),
        env=ENV,
    )


def test_training_step_near_capacity(py):
    py(
        PRELUDE
        + textwrap.dedent(
            """
        torch.manual_seed(0)
        m = torch.nn.Sequential(torch.nn.Linear(1024, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 1024))
        ref = torch.nn.Sequential(torch.nn.Linear(1024, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 1024))
        ref.load_state_dict(m.state_dict())
        m = m.neuron()
        x = torch.randn(64, 1024)
        for model, inp in ((m, x.neuron()), (ref, x)):
            loss = model(inp).square().mean()
            loss.backward()
        for p, q in zip(m.parameters(), ref.parameters()):
            torch.testing.assert_close(p.grad.cpu(), q.grad, rtol=1e-3, atol=1e-4)
        assert torch.neuron.memory_stats()['num_ooms'] == 0
        """
        ),
        env=ENV,
    )
