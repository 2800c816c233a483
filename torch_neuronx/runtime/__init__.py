"""`torch.neuron`: the runtime layer's public face, the device module of the neuron backend.

Shaped like `torch.cuda`, so code written against torch.cuda switches to torch.neuron name for
name: device management (devices.py), `torch.neuron.memory` (memory.py, like
torch.cuda.memory), random generators (random.py), streams and events (streams.py), mixed
precision capabilities (amp.py). The package registers this module with
torch._register_device_module("neuron", ...) at autoload.

The rest of the runtime layer is internal: the emulated instance (topology.py), the host view
of device memory (host.py), the environment-variable reader (env.py), the list of replaced
torch attributes (patches.py) and the patches themselves (module_ties.py, printing.py).
"""

from torch_neuronx import _C
from torch_neuronx.runtime import memory
from torch_neuronx.runtime.amp import get_amp_supported_dtype, is_bf16_supported
from torch_neuronx.runtime.devices import (
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
from torch_neuronx.runtime.memory import (
    empty_cache,
    max_memory_allocated,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_reserved,
    memory_snapshot,
    memory_stats,
    memory_stats_as_nested_dict,
    memory_summary,
    reset_accumulated_memory_stats,
    reset_max_memory_allocated,
    reset_max_memory_reserved,
    reset_peak_memory_stats,
)
from torch_neuronx.runtime.random import (
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
from torch_neuronx.runtime.streams import (
    Event,
    Stream,
    StreamContext,
    current_stream,
    default_stream,
    set_stream,
    stream,
)

__all__ = [
    "Event",
    "NeuronDeviceProperties",
    "Stream",
    "StreamContext",
    "current_device",
    "current_stream",
    "default_generators",
    "default_stream",
    "device",
    "device_count",
    "device_of",
    "empty_cache",
    "get_amp_supported_dtype",
    "get_device_capability",
    "get_device_name",
    "get_device_properties",
    "get_rng_state",
    "get_rng_state_all",
    "init",
    "initial_seed",
    "is_available",
    "is_bf16_supported",
    "is_initialized",
    "manual_seed",
    "manual_seed_all",
    "max_memory_allocated",
    "max_memory_reserved",
    "mem_get_info",
    "memory",
    "memory_allocated",
    "memory_reserved",
    "memory_snapshot",
    "memory_stats",
    "memory_stats_as_nested_dict",
    "memory_summary",
    "reset_accumulated_memory_stats",
    "reset_max_memory_allocated",
    "reset_max_memory_reserved",
    "reset_peak_memory_stats",
    "seed",
    "seed_all",
    "set_device",
    "set_rng_state",
    "set_rng_state_all",
    "set_stream",
    "stream",
    "synchronize",
]


def _lazy_init() -> None:
    # the name torch.cuda-shaped callers (torch.random.fork_rng, checkpointing) call
    init()


def _is_in_bad_fork() -> bool:
    # torch.manual_seed asks this before seeding the device's generators. True in a child
    # forked after the parent initialised the device (the driver's pthread_atfork handler
    # records it; using the device there raises and says to use spawn, as for CUDA).
    return _C._is_in_bad_fork()


def __getattr__(name):
    # torch.utils.checkpoint (and other torch.cuda-shaped callers) read `_initialized` to
    # decide whether to stash and replay device RNG state.
    if name == "_initialized":
        return is_initialized()
    if name in ("Scheduling", "PythonWrapperCodegen", "CppWrapperCodegen", "WrapperFxCodegen"):
        # asked by Inductor only (a lazy import: the package imports no Inductor)
        from torch_neuronx.runtime import inductor_device

        return inductor_device.CLASSES[name]
    raise AttributeError(f"module 'torch.neuron' has no attribute '{name}'")
