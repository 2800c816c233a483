"""Threads (issue 13, point 4): Python threads running ops on shared neuron tensors and modules.

Every stress test compares with CPU and fails on any exception raised in a worker. CI runs a
few seconds of each; ``TORCH_NEURONX_TEST_FULL=1`` (``make test-full``) runs them ten times
longer. What each run covers (threads x iterations) is in the test ids' docstrings.

Reviewed for races (and fixed): the host-alias cache on a tensor (read and replaced under one
lock), the kernel-plan cache (plans are returned by value, so an eviction by another thread
cannot free the plan an op is using), the neuron generators (seeding and state go through the
lock kernels draw under), and random ops whose CPU kernel has no Generator argument (they used
to lend the neuron state to PyTorch's default CPU generator for the call, so a thread drawing
CPU random numbers meanwhile drew from the device's stream).
"""

from __future__ import annotations

import copy
import threading

import torch

from torch_neuronx.runtime import env

FULL = env.flag("TORCH_NEURONX_TEST_FULL")
SCALE = 10 if FULL else 1
THREADS = 4


def run_threads(target, n=THREADS, args_for=lambda i: (i,)):
    """Runs ``target`` in ``n`` threads (all started together) and re-raises the first error."""
    errors: list[BaseException] = []
    barrier = threading.Barrier(n)

    def body(*args):
        try:
            barrier.wait(timeout=60)
            target(*args)
        except BaseException as e:  # reported below, with its thread's traceback
            errors.append(e)

    threads = [threading.Thread(target=body, args=args_for(i)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
        assert not t.is_alive(), "a worker thread hung"
    if errors:
        raise errors[0]


def mlp(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.LayerNorm(64), torch.nn.Linear(64, 8)
    )


def test_parallel_inference_on_a_shared_module():
    """4 threads x 20*SCALE forward passes of one shared module (and its shared weights)."""
    cpu_model = mlp(0).eval()
    model = mlp(0).eval().to("neuron")
    inputs = [torch.randn(16, 32, generator=torch.Generator().manual_seed(i)) for i in range(8)]
    with torch.no_grad():
        expected = [cpu_model(x) for x in inputs]

    def work(i):
        with torch.no_grad():
            for k in range(20 * SCALE):
                j = (i + k) % len(inputs)
                out = model(inputs[j].to("neuron"))
                torch.testing.assert_close(out.cpu(), expected[j], rtol=1e-5, atol=1e-5)

    run_threads(work)


def test_training_separate_models_in_parallel():
    """4 threads, each training its own model for 5*SCALE steps, compared with CPU."""

    def work(i):
        # one initialisation copied to neuron: mlp() seeds the global generator, which other
        # threads draw from too, so two separate mlp(i) calls may not get the same weights
        cpu_model = mlp(i)
        model = copy.deepcopy(cpu_model).to("neuron")
        cpu_opt = torch.optim.SGD(cpu_model.parameters(), lr=0.1, momentum=0.9)
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        g = torch.Generator().manual_seed(100 + i)
        for _ in range(5 * SCALE):
            x, y = torch.randn(16, 32, generator=g), torch.randn(16, 8, generator=g)
            for m, o, xx, yy in ((cpu_model, cpu_opt, x, y), (model, opt, x.neuron(), y.neuron())):
                o.zero_grad()
                torch.nn.functional.mse_loss(m(xx), yy).backward()
                o.step()
        for p_cpu, p in zip(cpu_model.parameters(), model.parameters()):
            torch.testing.assert_close(p.cpu(), p_cpu, rtol=1e-4, atol=1e-5)

    run_threads(work)


def test_allocation_and_free_from_many_threads():
    """4 threads x 200*SCALE allocations of random sizes (small and large pools), written,
    read back, freed out of order; the device's memory is back where it started."""
    torch.neuron.empty_cache()
    base = torch.neuron.memory_allocated()

    def work(i):
        g = torch.Generator().manual_seed(i)
        live = []
        for k in range(200 * SCALE):
            n = int(torch.randint(1, 1 << (8 + k % 14), (1,), generator=g))
            a = torch.randint(-100, 100, (n,), generator=g, dtype=torch.int32)
            d = a.to("neuron")
            d2 = d * 2 + 1  # an op's output: host workspace adopted as device memory
            live.append((a, d, d2))
            if len(live) > 6:
                a0, d0, d20 = live.pop(int(torch.randint(0, len(live), (1,), generator=g)))
                assert torch.equal(d0.cpu(), a0) and torch.equal(d20.cpu(), a0 * 2 + 1)
        live.clear()

    run_threads(work)
    assert torch.neuron.memory_allocated() == base
    s = torch.neuron.memory_stats()
    assert s["reserved_bytes.all.current"] >= s["allocated_bytes.all.current"]


def test_first_use_of_a_shared_tensor_from_many_threads():
    """50*SCALE fresh tensors, each first used by 4 threads at once (its host alias is built
    and cached by all of them concurrently), and views of it."""
    for k in range(50 * SCALE):
        src = torch.arange(4096, dtype=torch.float32) + k
        t = src.to("neuron")
        want = src * 3 + 1

        def work(i, t=t, src=src, want=want):
            for _ in range(5):
                torch.testing.assert_close((t * 3 + 1).cpu(), want)
                torch.testing.assert_close(t[i::4].sum().cpu(), src[i::4].sum())

        run_threads(work)


def test_plan_cache_eviction_under_threads(py):
    """4 threads x 300*SCALE ops of many signatures with a plan cache of 4 entries: plans are
    evicted while other threads run ops with them."""
    py(
        f"""
        import threading, torch
        from torch_neuronx import metrics
        errors = []
        def work(i):
            try:
                g = torch.Generator().manual_seed(i)
                for k in range(300 * {SCALE}):
                    n = 1 + (k * 7 + i) % 23
                    a = torch.randn(n, 3, generator=g)
                    dt = (torch.float32, torch.float64, torch.int64)[k % 3]
                    a = (a * 10).to(dt)
                    d = a.to('neuron')
                    got = (d * 2 - d.sum(0, keepdim=True)).cpu()
                    want = a * 2 - a.sum(0, keepdim=True)
                    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-4)
            except BaseException as e:
                errors.append(e)
        ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in ts: t.start()
        for t in ts: t.join()
        assert not errors, errors[0]
        assert metrics.get_counter_value('CompilationCache.Evictions') > 0
        assert metrics.get_counter_value('CompilationCache.Entries') <= 4
        """,
        env={"NEURON_COMPILATION_CACHE_MAX_ENTRIES": "4"},
    )


# Random ops on neuron whose CPU kernel has no Generator argument: the driver runs each with
# the device's generator (csrc/eager/kernel.cpp: run_random_without_generator). The first draws;
# the others are tagged random but draw nothing on the CPU path.
RANDOM_WITHOUT_GENERATOR = {
    "aten::native_dropout",
    "aten::_scaled_dot_product_flash_attention_for_cpu",
    "aten::_fused_sdp_choice",
}


def test_every_random_cpu_kernel_without_generator_is_handled():
    found = set()
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    for name in torch._C._dispatch_get_all_op_names():
        if not name.startswith("aten::") or not has(name, "CPU"):
            continue
        base, _, overload = name[len("aten::") :].partition(".")
        try:
            op = getattr(getattr(torch.ops.aten, base), overload or "default")
        except (AttributeError, RuntimeError):
            continue
        if torch.Tag.nondeterministic_seeded not in op.tags:
            continue
        if any("Generator" in str(a.type) for a in op._schema.arguments):
            continue
        found.add(f"aten::{base}" if not overload else name)
    assert found <= RANDOM_WITHOUT_GENERATOR, found - RANDOM_WITHOUT_GENERATOR


def neuron_random_ops(x):
    """One call of each kind of random op on neuron tensor ``x`` (2-D float)."""
    torch.nn.functional.dropout(x, 0.3, training=True)
    torch.ops.aten.native_dropout(x, 0.5, True)
    torch.rand(7, device="neuron")
    torch.randn(3, 5, device="neuron")
    torch.randint(0, 9, (11,), device="neuron")
    torch.randperm(17, device="neuron")
    torch.bernoulli(torch.full_like(x, 0.5))
    torch.multinomial(x.abs() + 0.1, 2)
    torch.empty_like(x).normal_()
    torch.empty_like(x).uniform_()
    torch.rand_like(x)


def test_random_ops_on_neuron_never_touch_the_cpu_generator():
    x = torch.randn(8, 6, device="neuron")
    before = torch.get_rng_state()
    neuron_random_ops(x)
    assert torch.equal(torch.get_rng_state(), before)


def test_neuron_dropout_matches_cpu_with_the_same_seed():
    x = torch.randn(64, 33)
    for p in (0.0, 0.3, 1.0):
        torch.manual_seed(5)
        out_cpu, mask_cpu = torch.ops.aten.native_dropout(x, p, True)
        torch.neuron.manual_seed(5)
        out, mask = torch.ops.aten.native_dropout(x.neuron(), p, True)
        assert mask.dtype == mask_cpu.dtype and torch.equal(mask.cpu(), mask_cpu)
        torch.testing.assert_close(out.cpu(), out_cpu)
    out, mask = torch.ops.aten.native_dropout(x.neuron(), 0.3, False)
    assert torch.equal(out.cpu(), x) and bool(mask.all())


def test_cpu_random_stream_is_undisturbed_by_neuron_random_ops_in_other_threads():
    """1 thread drawing CPU random numbers (checked one by one against its single-threaded
    sequence) for as long as 3 threads run 30*SCALE rounds of every kind of neuron random op."""
    rounds = 30 * SCALE
    x = torch.randn(64, 64, device="neuron")
    done = threading.Semaphore(0)
    draws = []

    def work(i):
        if i == 0:
            torch.manual_seed(1234)
            ref = torch.Generator().manual_seed(1234)  # the same stream, drawn privately
            finished = 0
            while finished < THREADS - 1:
                got, want = torch.rand(16), torch.rand(16, generator=ref)
                assert torch.equal(got, want), f"CPU draw {len(draws)} was disturbed"
                draws.append(1)
                finished += done.acquire(blocking=False)
        else:
            try:
                for _ in range(rounds):
                    neuron_random_ops(x)
            finally:
                done.release()

    run_threads(work)
    assert len(draws) > rounds, len(draws)  # the CPU thread really ran alongside
