"""`torch.neuron`: the device module of the neuron backend (shaped like `torch.cuda`).

Registered with torch._register_device_module("neuron", ...) at autoload, so user code
written against torch.cuda can switch to torch.neuron name for name.
"""
from torch_neuronx.runtime.amp import get_amp_supported_dtype, is_bf16_supported  # noqa: F401
from torch_neuronx.runtime.device import (  # noqa: F401
    NeuronDeviceProperties,
    current_device,
    device,
    device_count,
    device_of,
    get_device_capability,
    get_device_name,
    get_device_properties,
    init,
    is_available,
    is_initialized,
    set_device,
    synchronize,
)
from torch_neuronx.runtime.memory import (  # noqa: F401
    empty_cache,
    max_memory_allocated,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_reserved,
    memory_stats,
    memory_stats_as_nested_dict,
    memory_summary,
    reset_accumulated_memory_stats,
    reset_max_memory_allocated,
    reset_max_memory_reserved,
    reset_peak_memory_stats,
)
from torch_neuronx.runtime.random import (  # noqa: F401
    default_generators,
    get_rng_state,
    get_rng_state_all,
    initial_seed,
    manual_seed,
    manual_seed_all,
    seed,
    seed_all,
    set_rng_state,
    set_rng_state_all,
)
from torch_neuronx.runtime.streams import (  # noqa: F401
    Event,
    Stream,
    StreamContext,
    current_stream,
    default_stream,
    set_stream,
    stream,
)


def _lazy_init():
    init()


def get_dynamo_metrics():
    from torch_neuronx.compile.metrics import get_dynamo_metrics as f

    return f()


def reset_dynamo_metrics():
    from torch_neuronx.compile.metrics import reset_dynamo_metrics as f

    return f()


def _is_in_bad_fork() -> bool:
    return False


class _Memory:
    """torch.neuron.memory.* aliases (TorchNeuron exposes the allocator API there too)."""

    memory_stats = staticmethod(memory_stats)
    memory_allocated = staticmethod(memory_allocated)
    max_memory_allocated = staticmethod(max_memory_allocated)
    memory_reserved = staticmethod(memory_reserved)
    max_memory_reserved = staticmethod(max_memory_reserved)
    reset_peak_memory_stats = staticmethod(reset_peak_memory_stats)
    reset_accumulated_memory_stats = staticmethod(reset_accumulated_memory_stats)
    memory_summary = staticmethod(memory_summary)
    empty_cache = staticmethod(empty_cache)


memory = _Memory()


def __getattr__(name):
    # torch.utils.checkpoint (and other torch.cuda-shaped callers) read `_initialized` to
    # decide whether to stash and replay device RNG state.
    if name == "_initialized":
        return is_initialized()
    raise AttributeError(f"module 'torch.neuron' has no attribute '{name}'")
