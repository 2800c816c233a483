"""The device clocks and measure() regions (issue 10, point 3): per device, thread-safe,
resettable; recording is off unless somebody measures."""

import threading

import pytest

import torch_neuronx.perf as perf
from torch_neuronx.perf import clock
from torch_neuronx.perf.events import Cost


def _cost(seconds, flops=0.0, nbytes=0.0, name="x", engine="vector"):
    return Cost(
        kind="op",
        name=name,
        engine=engine,
        duration=seconds,
        flops=flops,
        bytes=nbytes,
        busy=((engine, seconds),),
    )


@pytest.fixture(autouse=True)
def _fresh_clocks():
    clock.reset()
    yield
    clock.reset()


def test_recording_is_off_unless_measured():
    assert not perf.recording()
    with perf.measure():
        assert perf.recording()
        with perf.measure():  # regions nest
            assert perf.recording()
        assert perf.recording()
    assert not perf.recording()
    with pytest.raises(RuntimeError, match="without a matching acquire"):
        perf.release()


def test_events_queue_per_device_and_devices_run_independently():
    with perf.measure() as m:
        a = perf.record(0, _cost(1e-3))
        b = perf.record(0, _cost(2e-3))
        c = perf.record(1, _cost(5e-4))
    assert (a.start, a.end) == (0.0, 1e-3)
    assert (b.start, b.end) == (1e-3, pytest.approx(3e-3))
    assert (c.start, c.end) == (0.0, 5e-4)
    s = m.summary()
    assert s["modeled"] is True
    assert s["device_time_s"] == pytest.approx(3e-3)  # the busiest device; devices run in parallel
    assert s["devices"][1]["time_s"] == pytest.approx(5e-4)
    assert perf.device_time(0) == pytest.approx(3e-3)


def test_reset_one_device_or_all():
    perf.record(0, _cost(1.0))
    perf.record(1, _cost(2.0))
    perf.reset(0)
    assert perf.device_time(0) == 0.0 and perf.device_time(1) == 2.0
    perf.reset()
    assert perf.device_time(1) == 0.0 and perf.devices() == []


def test_clock_is_thread_safe():
    threads, per_thread, dt = 8, 500, 1e-6
    start = threading.Barrier(threads)

    def work(i):
        start.wait()
        for _ in range(per_thread):
            perf.record(i % 2, _cost(dt, flops=1.0))

    with perf.measure() as m:
        ts = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    assert len(m.events) == threads * per_thread
    for d in (0, 1):
        evs = sorted((e for e in m.events if e.device == d), key=lambda e: e.start)
        # no two events overlap and none is lost: each starts where the previous ended
        assert all(x.end == pytest.approx(y.start) for x, y in zip(evs, evs[1:]))
        assert perf.totals(d)["events"] == threads * per_thread // 2
        assert perf.device_time(d) == pytest.approx(dt * threads * per_thread / 2)


def test_measure_filters_devices_and_resets():
    with perf.measure(devices=[1]) as m:
        perf.record(0, _cost(1e-3))
        perf.record(1, _cost(2e-3))
        assert [e.device for e in m.events] == [1]
        m.reset()
        perf.record(1, _cost(1e-3))
    assert len(m.events) == 1


def test_summary_mfu_and_hbm_fraction_follow_their_definitions():
    from torch_neuronx.perf import target

    core = target.current().core
    peak, bw = core.tensor_peak("bf16"), core.hbm_bw
    with perf.measure() as m:
        perf.record(
            0,
            Cost("op", "aten::mm", "tensor", 1e-3, flops=0.5 * peak * 1e-3, bytes=0.25 * bw * 1e-3),
        )
    s = m.summary()
    assert s["mfu"] == pytest.approx(0.5) and s["hbm_fraction"] == pytest.approx(0.25)
    assert s["peak_flops_per_device"] == peak
    row = m.by_op()[0]
    assert row["name"] == "aten::mm" and row["count"] == 1 and row["mfu"] == pytest.approx(0.5)


def test_price_is_the_tables_or_the_callers():
    with perf.measure(price_per_hour=36.0) as m:
        perf.record(0, _cost(100.0))
    s = m.summary()
    assert (
        s["instance_cost_usd"] == pytest.approx(1.0) and s["price_source"] == "passed by the caller"
    )


def test_listeners_see_every_event_on_the_recording_thread():
    seen = []
    perf.add_listener(lambda e: seen.append((e.cost.name, threading.get_ident())))
    try:
        perf.record(0, _cost(1e-6, name="a"))
    finally:
        perf.remove_listener(perf.clock._listeners[-1])
    assert seen == [("a", threading.get_ident())]


def test_native_flag_follows_recording():
    states = []
    previous = clock._native_flag  # the eager hook's setter, restored afterwards
    clock.set_native_flag(states.append)
    try:
        with perf.measure():
            pass
    finally:
        clock.set_native_flag(previous)
    assert states == [False, True, False]
