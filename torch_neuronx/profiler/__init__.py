"""torch_neuronx.profiler: the neuron device in PyTorch's own profiler.

Nothing to call: with the package installed, ::

    from torch.profiler import profile, ProfilerActivity
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
        model(x)
    print(prof.key_averages().table(sort_by="self_device_time_total"))  # "NEURON" columns
    prof.export_chrome_trace("trace.json")  # one track per neuron device

records every piece of neuron device work (eager ops, compiled kernels, collectives, copies,
CPU-fallback ops) as a device event whose duration is the **modeled Trainium time** from
``torch_neuronx.perf``, not a measurement: no Trainium runs here. How: the C++ driver
registers a Kineto child activity profiler for PrivateUse1 (``runtime/device_trace.cpp``);
this layer switches the performance model on for each recording session and forwards its
events (``device_events.py``). ``schedule``, ``tensorboard_trace_handler``,
``record_function``, ``record_shapes``, ``with_stack`` and ``profile_memory`` are PyTorch's own
and behave as with CUDA.

Layering: above ``perf`` (whose events it forwards) and ``runtime``; below ``eager``.
"""

from torch_neuronx.profiler.device_events import install  # noqa: F401

__all__ = ["install"]
