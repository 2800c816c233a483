"""torch.neuron device module and torch.accelerator (issue 2, point 5; point 8 streams)."""

import pytest
import torch

import torch_neuronx

API = """is_available is_initialized init device_count current_device set_device device
get_device_name get_device_properties synchronize Stream Event current_stream default_stream
stream set_stream manual_seed manual_seed_all seed seed_all initial_seed get_rng_state
set_rng_state get_rng_state_all set_rng_state_all memory_allocated max_memory_allocated
memory_reserved max_memory_reserved reset_peak_memory_stats reset_accumulated_memory_stats
memory_stats memory_summary empty_cache is_bf16_supported get_amp_supported_dtype""".split()


@pytest.mark.parametrize("name", API)
def test_api_present_in_both_places(name):
    assert callable(getattr(torch.neuron, name))
    assert getattr(torch_neuronx, name) is getattr(torch.neuron, name)


def test_basic_queries():
    assert torch.neuron.is_available()
    torch.neuron.init()
    assert torch.neuron.is_initialized()
    assert torch.neuron.device_count() == 4
    assert "NeuronCore" in torch.neuron.get_device_name(0)
    p = torch.neuron.get_device_properties(0)
    assert p.total_memory == 24 << 30 and p.profile == "trn2.3xlarge"
    assert torch.neuron.is_bf16_supported()
    assert torch.bfloat16 in torch.neuron.get_amp_supported_dtype()


def test_set_device_and_context_manager():
    assert torch.neuron.current_device() == 0
    with torch.neuron.device(2):
        assert torch.neuron.current_device() == 2
        assert torch.ones(1, device="neuron").device == torch.device("neuron:2")
    assert torch.neuron.current_device() == 0
    torch.neuron.set_device(torch.device("neuron:1"))
    try:
        assert torch.empty(1, device="neuron").device.index == 1
    finally:
        torch.neuron.set_device(0)


def test_accelerator_reports_neuron():
    assert torch.accelerator.is_available()
    assert torch.accelerator.current_accelerator() == torch.device("neuron")
    assert torch.accelerator.device_count() == 4
    torch.accelerator.set_device_index(3)
    try:
        assert torch.accelerator.current_device_index() == 3
    finally:
        torch.accelerator.set_device_index(0)
    torch.accelerator.synchronize()
    s = torch.accelerator.current_stream()
    assert s.device.type == "neuron"


def test_streams_behave_like_cuda():
    s = torch.neuron.Stream()
    assert isinstance(s, torch.neuron.Stream) and s.device.type == "neuron"
    assert torch.neuron.current_stream() == torch.neuron.default_stream()
    with torch.neuron.stream(s):
        assert torch.neuron.current_stream() == s
        x = torch.randn(64, 64, device="neuron") @ torch.randn(64, 64, device="neuron")
    assert torch.neuron.current_stream() == torch.neuron.default_stream()
    assert s.query()
    s.synchronize()
    other = torch.neuron.Stream()
    other.wait_stream(s)
    ev = s.record_event()
    other.wait_event(ev)
    assert ev.query()
    torch.neuron.set_stream(s)
    assert torch.neuron.current_stream() == s
    torch.neuron.set_stream(torch.neuron.default_stream())
    del x


def test_events_elapsed_time():
    a = torch.neuron.Event(enable_timing=True)
    b = torch.neuron.Event(enable_timing=True)
    a.record()
    y = torch.randn(128, 128, device="neuron")
    for _ in range(5):
        y = y @ y
    b.record()
    b.synchronize()
    assert a.query() and b.query()
    assert a.elapsed_time(b) >= 0.0
    c = torch.neuron.Event()
    d = torch.neuron.Event()
    c.record()
    d.record()
    with pytest.raises(ValueError, match="must be created with argument 'enable_timing=True'"):
        c.elapsed_time(d)


def test_host_reads_go_through_one_sync_point():
    import torch_neuronx.metrics as m

    x = torch.randn(4, device="neuron")
    before = m.get_counter_value("Runtime.HostReadSyncs")
    x.cpu()
    x.sum().item()
    str(x)
    assert m.get_counter_value("Runtime.HostReadSyncs") - before == 3


def test_hf_style_rng_and_memory_calls():
    # transformers/accelerate call these when torch_neuronx is importable.
    states = torch.neuron.get_rng_state_all()
    assert len(states) == torch.neuron.device_count()
    torch.neuron.set_rng_state_all(states)
    x = torch.ones(1024, device="neuron:0")
    allocated = torch.neuron.memory_allocated(0)
    assert allocated == torch.neuron.memory_stats(0)["allocated_bytes.all.current"] >= x.nbytes
    assert torch.neuron.max_memory_allocated() >= allocated
