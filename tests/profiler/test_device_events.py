"""torch.profiler with ProfilerActivity.PrivateUse1 (issue 10, point 4): every piece of neuron
device work is a device event with its modeled Trainium duration, shown as the op's device time
in key_averages() and on one Chrome-trace track per neuron device, linked to the launching op.

The durations asserted are those the performance model recorded (read through its listener),
never wall times."""

import glob
import json
import os

import pytest
import torch
from torch.autograd import DeviceType
from torch.profiler import (
    ProfilerActivity,
    profile,
    record_function,
    schedule,
    tensorboard_trace_handler,
)

from torch_neuronx import perf

BOTH = [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]
HERE = os.path.basename(__file__)
US = 1e6  # key_averages() reports microseconds; the model, seconds


class ModelEvents:
    """The performance model's events recorded while the block runs (its own listener)."""

    def __enter__(self):
        self.events = []
        perf.add_listener(self.events.append)
        return self

    def __exit__(self, *exc):
        perf.remove_listener(self.events.append)

    def by_kind(self, kind):
        return [e for e in self.events if e.cost.kind == kind]


def _work(device="neuron:0"):
    a = torch.randn(64, 128)
    b = torch.randn(128, 32)
    an, bn = a.to(device), b.to(device)
    y = torch.relu(an @ bn + 1.0)
    torch.testing.assert_close(y.cpu(), torch.relu(a @ b + 1.0))
    return y


def _trace(prof, tmp_path, name="trace.json"):
    path = str(tmp_path / name)
    prof.export_chrome_trace(path)
    # errors="replace": PyTorch 2.13's Python tracer (with_stack) can write a function name from
    # freed memory (pytorch/pytorch#136040; also without torch_neuronx)
    with open(path, errors="replace") as f:
        return json.load(f)


def _op_rows(prof, **kw):
    """key_averages() rows of host (CPU) events: ops, ranges, launches. Device events have rows
    of their own (device_type NEURON), which may share a name with their op."""
    return {r.key: r for r in prof.key_averages(**kw) if r.device_type == DeviceType.CPU}


def test_privateuse1_is_a_supported_activity_named_neuron():
    assert ProfilerActivity.PrivateUse1 in torch.profiler.supported_activities()


def test_key_averages_device_time_is_the_modeled_time():
    _work()  # plans compiled, tensors cached: the profiled run is steady state
    with ModelEvents() as model, profile(activities=BOTH) as prof:
        _work()
    ops = model.by_kind("op")
    assert {e.cost.name.split(".")[0] for e in ops} >= {"aten::mm", "aten::add", "aten::relu"}
    rows = _op_rows(prof)
    for op in ("aten::mm", "aten::add", "aten::relu"):
        modeled = sum(e.end - e.start for e in ops if e.cost.name.split(".")[0] == op) * US
        assert modeled > 0
        # Kineto keeps integer nanoseconds: at most 1 ns of rounding per event
        assert rows[op].self_device_time_total == pytest.approx(modeled, abs=1e-3 * len(ops))
    # the device events themselves: one per model event, same durations
    device_events = [e for e in prof.events() if e.device_type == DeviceType.PrivateUse1]
    assert len(device_events) == len(model.events)
    got = sorted(round(e.time_range.elapsed_us(), 3) for e in device_events)
    want = sorted(round((e.end - e.start) * US, 3) for e in model.events)
    assert got == pytest.approx(want, abs=1e-3)
    # every modeled second is some op's device time: copies included, nothing counted twice
    total = sum(e.end - e.start for e in model.events) * US
    assert sum(r.self_device_time_total for r in rows.values()) == pytest.approx(
        total, abs=1e-3 * len(got)
    )


def test_trace_has_a_track_per_device_with_linked_events(tmp_path):
    _work("neuron:0"), _work("neuron:1")
    with ModelEvents() as model, profile(activities=BOTH, record_shapes=True) as prof:
        _work("neuron:0")
        _work("neuron:1")
    trace = _trace(prof, tmp_path)
    events = trace["traceEvents"]
    names = {
        (e["pid"], e["args"]["name"])
        for e in events
        if e.get("ph") == "M" and e["name"] == "process_name"
    }
    assert (0, "neuron:0") in names and (1, "neuron:1") in names

    cpu_ops = {
        e["args"]["External id"]: e
        for e in events
        if e.get("cat") == "cpu_op" and "External id" in e.get("args", {})
    }
    device = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy")]
    assert len(device) == len(model.events)
    assert {e["pid"] for e in device} == {0, 1}
    for e in device:
        args = e["args"]
        for key in ("kind", "engine", "shapes", "dtype", "flops", "bytes", "device"):
            assert key in args, (key, e)
        assert args["device"] == e["pid"]
        if args["kind"] == "op":
            op = cpu_ops[args["External id"]]  # linked to the launching ATen op
            assert op["name"] == e["name"].split(".")[0], (op["name"], e["name"])
    mm = [e for e in device if e["name"].startswith("aten::mm")]
    assert mm and all(
        e["args"]["engine"] == "tensor" and e["args"]["flops"] == 2 * 64 * 128 * 32 for e in mm
    )

    # each device event has a host launch event (cat privateuse1_runtime) inside its op, joined by a flow
    launches = [e for e in events if e.get("cat") == "privateuse1_runtime"]
    assert len(launches) == len(device)
    starts = {e["id"]: e for e in events if e.get("ph") == "s" and e.get("cat") == "ac2g"}
    ends = {e["id"]: e for e in events if e.get("ph") == "f" and e.get("cat") == "ac2g"}
    assert len(starts) == len(ends) == len(device)
    for fid, end in ends.items():
        assert end["pid"] in (0, 1) and starts[fid]["pid"] == os.getpid()
    for launch in launches:
        if "External id" in launch["args"]:
            op = cpu_ops[launch["args"]["External id"]]
            assert op["ts"] <= launch["ts"] <= op["ts"] + op["dur"]


def test_device_events_never_start_before_their_launch(tmp_path):
    with profile(activities=BOTH) as prof:
        for _ in range(3):
            _work()
    events = _trace(prof, tmp_path)["traceEvents"]
    launches = {
        e["args"]["External id"]: e
        for e in events
        if e.get("cat") == "privateuse1_runtime" and "External id" in e["args"]
    }
    device = sorted(
        (e for e in events if e.get("cat") == "kernel" and e["pid"] == 0), key=lambda e: e["ts"]
    )
    for prev, cur in zip(device, device[1:]):
        assert cur["ts"] >= prev["ts"] + prev["dur"] - 1e-3  # one queue per device: no overlap
    for e in device:
        if e["args"]["External id"] in launches:
            assert e["ts"] >= launches[e["args"]["External id"]]["ts"] - 1e-3


def test_cpu_only_profiles_have_no_device_events():
    with ModelEvents() as model, profile(activities=[ProfilerActivity.CPU]) as prof:
        _work()
    assert model.events == []  # the model stayed off: nobody asked for device time
    assert not [e for e in prof.events() if e.device_type == DeviceType.PrivateUse1]


def test_copies_are_memcpy_events(tmp_path):
    x = torch.randn(256, 256)
    with profile(activities=BOTH) as prof:
        y = x.to("neuron")
        back = y.cpu()
    torch.testing.assert_close(back, x)
    events = _trace(prof, tmp_path)["traceEvents"]
    copies = [e for e in events if e.get("cat") == "gpu_memcpy"]
    assert {e["args"]["kind"] for e in copies} == {"copy"}
    assert {e["args"]["bytes"] for e in copies} == {256 * 256 * 4}
    assert len(copies) == 2


def test_record_function_range_carries_its_ops_device_time():
    with profile(activities=BOTH) as prof:
        with record_function("block"):
            _work()
        _work()
    rows = _op_rows(prof)
    inside = rows["block"].device_time_total
    assert inside > 0
    # half of the work ran inside the range
    assert inside == pytest.approx(
        sum(r.self_device_time_total for r in rows.values()) / 2, rel=1e-6
    )


def test_record_shapes_with_flops_and_with_stack(tmp_path):
    a, b = torch.randn(64, 128), torch.randn(128, 32)
    an, bn = a.to("neuron"), b.to("neuron")
    with profile(activities=BOTH, record_shapes=True, with_flops=True) as prof:
        c = an @ bn
    torch.testing.assert_close(c.cpu(), a @ b)
    mm = [
        r
        for r in prof.key_averages(group_by_input_shape=True)
        if r.key == "aten::mm" and r.device_type == DeviceType.CPU
    ]
    assert [r.input_shapes for r in mm] == [[[64, 128], [128, 32]]]
    assert mm[0].device_time_total > 0
    assert mm[0].flops == 2 * 64 * 128 * 32  # PyTorch's own FLOP formula, on the op's row

    # with_stack: the Python frames around each op are in the trace, as for CUDA; the neuron
    # kernel's launching op runs inside this file's _work()
    with profile(activities=BOTH, with_stack=True) as prof:
        _work()
    events = _trace(prof, tmp_path)["traceEvents"]
    frames = [
        e
        for e in events
        if e.get("cat") == "python_function" and HERE in e["name"] and "_work" in e["name"]
    ]
    assert frames
    ops = {
        e["args"]["External id"]: e
        for e in events
        if e.get("cat") == "cpu_op" and "External id" in e.get("args", {})
    }
    mm = [e for e in events if e.get("cat") == "kernel" and e["name"].startswith("aten::mm")]
    assert mm
    op = ops[mm[0]["args"]["External id"]]
    assert any(f["ts"] <= op["ts"] and op["ts"] + op["dur"] <= f["ts"] + f["dur"] for f in frames)


def test_profile_memory_counts_neuron_allocations():
    with profile(activities=BOTH, profile_memory=True) as prof:
        x = torch.empty(1 << 20, device="neuron")  # 4 MiB
        del x
    rows = [r for r in prof.key_averages() if r.key == "aten::empty"]
    assert rows and rows[0].device_memory_usage >= 4 << 20
    assert rows[0].cpu_memory_usage == 0


def test_schedule_and_tensorboard_handler_write_the_active_steps(tmp_path):
    out = tmp_path / "tb"
    with ModelEvents() as model:
        with profile(
            activities=BOTH,
            schedule=schedule(wait=1, warmup=1, active=2, repeat=1),
            on_trace_ready=tensorboard_trace_handler(str(out)),
        ) as prof:
            for _ in range(6):
                _work()
                prof.step()
    files = glob.glob(str(out / "*.pt.trace.json"))
    assert len(files) == 1
    with open(files[0]) as f:
        events = json.load(f)["traceEvents"]
    device = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy")]
    # the model ran for the two active steps only (not while waiting or warming up), and
    # every event it recorded is in the trace: one aten::mm per step
    assert len(device) == len(model.events) > 0
    assert len([e for e in device if e["name"].startswith("aten::mm")]) == 2


def test_compiled_graph_kernels_are_device_events(tmp_path):
    def f(a, b):
        return torch.relu(a * b + 1.0) * 2.0

    compiled = torch.compile(f, backend="neuron")
    a, b = torch.randn(1024), torch.randn(1024)
    an, bn = a.to("neuron"), b.to("neuron")
    torch.testing.assert_close(compiled(an, bn).cpu(), f(a, b))  # compile outside the profile
    with ModelEvents() as model, profile(activities=BOTH) as prof:
        out = compiled(an, bn)
    torch.testing.assert_close(out.cpu(), f(a, b))
    kernels = model.by_kind("kernel")
    assert kernels, [e.cost.kind for e in model.events]
    events = _trace(prof, tmp_path)["traceEvents"]
    traced = [
        e for e in events if e.get("cat") == "kernel" and e["args"]["kind"] in ("kernel", "graph")
    ]
    assert len(traced) == len(kernels) + len(model.by_kind("graph"))
    rows = {r.key: r for r in prof.key_averages() if r.device_type == DeviceType.PrivateUse1}
    for k in kernels:
        assert rows[k.cost.name].self_device_time_total > 0


def test_legacy_autograd_profiler_says_where_device_time_is(py):
    py("""
        import warnings, torch
        x = torch.randn(8, 8, device="neuron")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with torch.autograd.profiler.profile(use_device="neuron", use_kineto=False) as prof:
                y = x * 2
        torch.testing.assert_close(y.cpu(), x.cpu() * 2)
        msgs = [str(w.message) for w in caught if "use_kineto=False" in str(w.message)]
        assert len(msgs) == 1 and "ProfilerActivity.PrivateUse1" in msgs[0], msgs
        rows = {r.key: r for r in prof.key_averages()}
        assert rows["aten::mul"].cpu_time_total > 0
        assert rows["aten::mul"].device_time_total == 0  # no device timer: nothing invented
    """)
