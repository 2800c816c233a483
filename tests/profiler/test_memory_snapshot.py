"""Memory snapshots of the neuron allocator in torch.cuda's format (issue 10, point 5), read by
PyTorch's own visualiser functions (torch/cuda/_memory_viz.py)."""

import base64
import os
import pickle

import pytest
import torch
from torch.cuda import _memory_viz

SEGMENT_KEYS = {
    "device",
    "address",
    "total_size",
    "allocated_size",
    "active_size",
    "requested_size",
    "stream",
    "segment_type",
    "segment_pool_id",
    "is_expandable",
    "frames",
    "blocks",
}
BLOCK_KEYS = {"address", "size", "requested_size", "state", "frames"}
TRACE_KEYS = {"action", "addr", "size", "stream", "time_us", "frames"}
HERE = os.path.basename(__file__)


@pytest.fixture
def history():
    torch.neuron.memory._record_memory_history(clear_history=True)
    yield
    torch.neuron.memory._record_memory_history(enabled=None)


def allocate_activations():  # the frame the snapshot must name
    return torch.empty(3 << 20, dtype=torch.uint8, device="neuron")  # 3 MiB: large pool


def _frames_name(frames, fn):
    return any(f["name"] == fn and f["filename"].endswith(HERE) and f["line"] > 0 for f in frames)


def test_snapshot_has_torch_cuda_format_and_stacks(history):
    keep = allocate_activations()
    small = torch.ones(10, device="neuron")
    torch.testing.assert_close(small.cpu(), torch.ones(10))
    gone = allocate_activations()
    del gone
    snap = torch.neuron.memory._snapshot()
    assert set(snap) >= {"segments", "device_traces", "allocator_settings"}
    assert len(snap["device_traces"]) == torch.neuron.device_count()

    for seg in snap["segments"]:
        assert set(seg) == SEGMENT_KEYS
        assert seg["segment_type"] in ("small", "large")
        assert sum(b["size"] for b in seg["blocks"]) == seg["total_size"]
        assert seg["allocated_size"] == sum(
            b["size"] for b in seg["blocks"] if b["state"] == "active_allocated"
        )
        addr = seg["address"]
        for b in seg["blocks"]:  # blocks tile the segment in address order
            assert set(b) == BLOCK_KEYS and b["address"] == addr
            addr += b["size"]
    live = [b for s in snap["segments"] for b in s["blocks"] if b["address"] == keep.data_ptr()]
    assert len(live) == 1 and live[0]["state"] == "active_allocated"
    assert live[0]["requested_size"] == 3 << 20
    assert _frames_name(live[0]["frames"], "allocate_activations")

    trace = snap["device_traces"][0]
    assert all(set(e) >= TRACE_KEYS for e in trace)
    actions = [e["action"] for e in trace]
    assert {"alloc", "free_requested", "free_completed", "snapshot"} <= set(actions)
    allocs = [e for e in trace if e["action"] == "alloc" and e["size"] >= 3 << 20]
    assert len(allocs) == 2 and all(
        _frames_name(e["frames"], "allocate_activations") for e in allocs
    )
    freed = [e for e in trace if e["action"] == "free_completed" and e["addr"] == allocs[1]["addr"]]
    assert len(freed) == 1
    assert [e["time_us"] for e in trace] == sorted(e["time_us"] for e in trace)
    del keep


def test_snapshot_agrees_with_memory_stats(history):
    x = torch.randn(1000, 1000, device="neuron")
    snap = torch.neuron.memory._snapshot()
    for d in range(torch.neuron.device_count()):
        segs = [s for s in snap["segments"] if s["device"] == d]
        assert sum(s["total_size"] for s in segs) == torch.neuron.memory_reserved(d)
        assert sum(s["allocated_size"] for s in segs) == torch.neuron.memory_allocated(d)
    del x


def test_memory_viz_renders_a_neuron_snapshot(history, tmp_path):
    torch.neuron.empty_cache()  # the next allocations reserve new segments (segment_alloc)
    keep = allocate_activations()
    for _ in range(3):
        t = torch.randn(256, 256, device="neuron")
        del t
    torch.neuron.empty_cache()  # segment_free entries
    path = str(tmp_path / "snap.pickle")
    torch.neuron.memory._dump_snapshot(path)
    with open(path, "rb") as f:
        snap = pickle.load(f)
    assert {e["action"] for e in snap["device_traces"][0]} >= {
        "segment_alloc",
        "segment_free",
        "alloc",
    }

    summary = _memory_viz.segsum(snap)
    assert f"segments: {len(snap['segments'])}" in summary and "total_reserved:" in summary
    text = _memory_viz.trace(snap)
    assert "Device 0" in text and "cudaMalloc(" in text  # the viewer's names for segment_alloc
    flame = _memory_viz.memory(snap, format_flamegraph=lambda lines: lines)
    assert "allocate_activations" in flame
    assert _memory_viz.segments(snap, format_flamegraph=lambda lines: lines)
    for html in (_memory_viz.trace_plot(snap), _memory_viz.segment_plot(snap)):
        encoded = html.split('"base64": "')[1].split('"')[0]
        assert pickle.loads(base64.b64decode(encoded).rstrip(b"\x00")) == snap
    del keep


def test_context_none_records_no_stacks_and_disable_stops():
    torch.neuron.memory._record_memory_history(context=None, clear_history=True)
    try:
        x = allocate_activations()
        trace = torch.neuron.memory._snapshot()["device_traces"][0]
        assert trace and all(e["frames"] == [] for e in trace)
    finally:
        torch.neuron.memory._record_memory_history(enabled=None)
    y = allocate_activations()
    assert torch.neuron.memory._snapshot()["device_traces"] == [[]] * torch.neuron.device_count()
    del x, y


def test_max_entries_and_skip_actions():
    torch.neuron.memory._record_memory_history(
        max_entries=4, skip_actions=["free_requested"], clear_history=True
    )
    try:
        for _ in range(5):
            t = torch.ones(100, device="neuron")
            del t
        trace = torch.neuron.memory._snapshot()["device_traces"][0]
        assert len(trace) == 4
        assert "free_requested" not in {e["action"] for e in trace}
    finally:
        torch.neuron.memory._record_memory_history(enabled=None)
    with pytest.raises(ValueError, match="skip_actions"):
        torch.neuron.memory._record_memory_history(skip_actions=["mallocs"])


def test_out_of_memory_is_recorded(history):
    capacity = torch.neuron.get_device_properties(0).total_memory
    with pytest.raises(torch.OutOfMemoryError):
        torch.empty(capacity + (1 << 30), dtype=torch.uint8, device="neuron")
    ooms = [e for e in torch.neuron.memory._snapshot()["device_traces"][0] if e["action"] == "oom"]
    assert (
        len(ooms) == 1 and ooms[0]["size"] >= capacity and 0 <= ooms[0]["device_free"] <= capacity
    )


def test_memory_summary_reads_the_same_allocator_while_recording(history):
    from torch_neuronx.runtime.memory import _fmt

    x = allocate_activations()
    text = torch.neuron.memory_summary(0)
    assert "neuron memory summary, device ID 0" in text
    allocated = next(line for line in text.splitlines() if line.startswith("| Allocated memory"))
    assert allocated.split("|")[2].strip() == _fmt(torch.neuron.memory_allocated(0))
    del x
