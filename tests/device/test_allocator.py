"""Caching segment allocator: pools, rounding, caching, OOM, threads (issue 2, point 4)."""

import threading

import torch

MiB = 1 << 20


def stats():
    return torch.neuron.memory_stats()


def check_invariants(s):
    for pool in ("all", "small_pool", "large_pool"):
        assert s[f"reserved_bytes.{pool}.current"] >= s[f"allocated_bytes.{pool}.current"]
        assert s[f"allocated_bytes.{pool}.current"] >= s[f"active_bytes.{pool}.current"] >= 0


def test_small_and_large_pools_and_rounding():
    torch.neuron.empty_cache()
    before = stats()
    small = torch.empty(100, dtype=torch.uint8, device="neuron")  # rounds up to 256 B
    s = stats()
    assert (
        s["allocated_bytes.small_pool.current"] - before["allocated_bytes.small_pool.current"]
        == 256
    )
    assert (
        s["requested_bytes.small_pool.current"] - before["requested_bytes.small_pool.current"]
        == 100
    )
    large = torch.empty(3 * MiB + 1, dtype=torch.uint8, device="neuron")
    s2 = stats()
    grown = s2["allocated_bytes.large_pool.current"] - s["allocated_bytes.large_pool.current"]
    assert 3 * MiB + 1 < grown <= 4 * MiB  # a size class, not the exact request
    huge = torch.empty(
        17 * MiB + 3, dtype=torch.uint8, device="neuron"
    )  # >= 16 MiB: not size-classed
    s3 = stats()
    assert (
        s3["allocated_bytes.large_pool.current"] - s2["allocated_bytes.large_pool.current"]
        < 17 * MiB + 1024
    )
    check_invariants(s3)
    del small, large, huge


def test_freed_blocks_are_cached_and_reused():
    torch.neuron.empty_cache()
    x = torch.empty(2 * MiB, dtype=torch.uint8, device="neuron")
    ptr = x.data_ptr()
    reserved = torch.neuron.memory_reserved()
    del x
    assert torch.neuron.memory_reserved() == reserved  # cached, not released
    y = torch.empty(2 * MiB, dtype=torch.uint8, device="neuron")
    assert y.data_ptr() == ptr and torch.neuron.memory_reserved() == reserved
    del y
    torch.neuron.empty_cache()
    assert torch.neuron.memory_reserved() < reserved
    check_invariants(stats())


def test_peak_and_reset():
    torch.neuron.reset_peak_memory_stats()
    base = torch.neuron.memory_allocated()
    x = torch.empty(8 * MiB, dtype=torch.uint8, device="neuron")
    del x
    assert torch.neuron.max_memory_allocated() >= base + 8 * MiB
    torch.neuron.reset_peak_memory_stats()
    assert torch.neuron.max_memory_allocated() == torch.neuron.memory_allocated()
    torch.neuron.reset_accumulated_memory_stats()
    assert stats()["allocated_bytes.all.allocated"] == 0


def test_memory_summary_and_nested():
    text = torch.neuron.memory_summary()
    assert "Allocated memory" in text and "Reserved memory" in text
    assert "current" in torch.neuron.memory_stats_as_nested_dict()["allocated_bytes"]["all"]


def test_out_of_memory_is_recoverable(py):
    py(
        """
        import torch
        keep = torch.full((4 << 20,), 7.0, device='neuron')      # 16 MiB
        try:
            torch.empty(64 << 20, dtype=torch.uint8, device='neuron')   # 64 MiB > 48 MiB capacity
        except torch.OutOfMemoryError as e:
            msg = str(e)
        else:
            raise AssertionError('allocating 64 MiB of a 48 MiB core did not raise')
        parts = ('neuron:0', 'Tried to allocate 64.00 MiB', '48.00 MiB', 'reserved', 'allocated')
        for part in parts:
            assert part in msg, (part, msg)
        assert torch.neuron.memory_stats()['num_ooms'] == 1
        assert bool((keep == 7).all())
        del keep
        torch.neuron.empty_cache()
        ok = torch.empty(40 << 20, dtype=torch.uint8, device='neuron')  # fits once memory is freed
        assert ok.numel() == 40 << 20
        """,
        env={"TORCH_NEURONX_HBM_PER_CORE": "48MiB"},
    )


def test_oom_frees_cache_before_failing(py):
    py(
        """
        import torch
        for _ in range(3):
            x = torch.empty(20 << 20, dtype=torch.uint8, device='neuron'); del x
            y = torch.empty(30 << 20, dtype=torch.uint8, device='neuron'); del y
        stats = torch.neuron.memory_stats()
        assert stats['num_ooms'] == 0, stats['num_ooms']
        assert stats['num_alloc_retries'] > 0, stats['num_alloc_retries']
        """,
        env={"TORCH_NEURONX_HBM_PER_CORE": "48MiB"},
    )


def test_thread_safety():
    errors = []

    def work(seed):
        try:
            g = torch.Generator().manual_seed(seed)
            for _ in range(50):
                n = int(torch.randint(1, 4096, (1,), generator=g))
                a = torch.randn(n, generator=g)
                d = a.to("neuron")
                assert torch.equal(d.cpu(), a)
        except Exception as e:  # collected and reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
        assert not t.is_alive(), "a worker thread did not finish within 120 s"
    assert not errors, errors
    check_invariants(stats())


def test_small_pool_serves_the_best_fitting_free_block(py):
    # A fresh interpreter: no free blocks left behind by earlier tests. Holes of 1, 4, 2 and
    # 2 KiB, each followed by a live 256 B tensor so that they do not merge.
    py(
        """
        import torch
        def t(n):
            return torch.empty(n, dtype=torch.uint8, device='neuron')
        holes, keep = {}, []
        for name, n in [('1k', 1024), ('4k', 4096), ('2k_a', 2048), ('2k_b', 2048)]:
            holes[name] = t(n)
            keep.append(t(256))
        ptr = {k: v.data_ptr() for k, v in holes.items()}
        for name in ('1k', '4k', '2k_a', '2k_b'):  # 2k_b is freed last
            del holes[name]
        # 1.5 KiB (a size class of its own): the smallest hole that fits is a 2 KiB one, and of
        # the two the most recently freed; then the other one (the first left 512 B behind)
        a = t(1536)
        assert a.data_ptr() == ptr['2k_b'], (a.data_ptr(), ptr)
        b = t(1536)
        assert b.data_ptr() == ptr['2k_a'], (b.data_ptr(), ptr)
        c = t(3000)  # 3 KiB: only the 4 KiB hole fits (the segment's free tail is larger)
        assert c.data_ptr() == ptr['4k'], (c.data_ptr(), ptr)
        # two 1 KiB holes now: the first one, and what c left of the 4 KiB one (more recent)
        d = t(1024)
        assert d.data_ptr() == ptr['4k'] + 3072, (d.data_ptr(), ptr)
        e = t(1024)
        assert e.data_ptr() == ptr['1k'], (e.data_ptr(), ptr)
        s = torch.neuron.memory_stats()
        assert s['segment.small_pool.current'] == 1, s['segment.small_pool.current']
        assert s['active_bytes.all.current'] == s['allocated_bytes.all.current']
        del a, b, c, d, e, keep
        torch.neuron.empty_cache()  # every small block merged back: the segment is released
        assert torch.neuron.memory_stats()['segment.small_pool.current'] == 0
        """
    )
