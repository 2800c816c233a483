"""torch_neuronx: PyTorch's `neuron` device (AWS Trainium) on an emulated NeuronCore.

Importing this package (PyTorch does it at `import torch` through the `torch.backends` entry
point) loads the C++ driver, names PrivateUse1 `neuron`, makes torch_neuronx.runtime
`torch.neuron`, installs the op policy and the patches listed in runtime/patches.py, and
registers the `neuron` distributed backend. It sits above every layer (docs/architecture.md),
so it is the one place that wires them together. It imports neither Dynamo nor Inductor.
"""

from torch_neuronx._version import __version__  # noqa: F401  (the one definition)


def _autoload() -> None:
    """Entry point for PyTorch's backend autoloading: importing this package registers it.

    Defined before `import torch`: when torch_neuronx is imported first, `import torch`
    autoloads this (partially initialised) module and looks this name up."""


def _install() -> None:
    import torch

    from torch_neuronx import _C  # the driver, first: every other module relies on it
    from torch_neuronx.runtime import env, log, topology

    log.configure()  # TORCH_NEURONX_LOG_LEVEL / _LOG_FILE / _ENABLE_STACK_TRACE, for every layer
    topo = topology.current()
    _C._configure(
        topo.device_count,
        topo.hbm_per_core,
        topo.profile.name,
        env.integer("NEURON_COMPILATION_CACHE_MAX_ENTRIES", 0, minimum=0),
    )
    if torch._C._get_privateuse1_backend_name() != "neuron":
        torch.utils.rename_privateuse1_backend("neuron")

    from torch_neuronx import runtime

    if not hasattr(torch, "neuron"):
        torch._register_device_module("neuron", runtime)
        torch.utils.generate_methods_for_privateuse1_backend(
            for_tensor=True, for_module=True, for_storage=True
        )

    from torch_neuronx.compile import inputs as compile_inputs
    from torch_neuronx.eager import (
        autograd_threads,
        conv_backend,
        group_norm_autograd,
        int_histc,
        op_policy,
        rnn_cells,
        unsupported_features,
    )
    from torch_neuronx.runtime import module_ties, printing

    printing.install()
    module_ties.install()
    unsupported_features.install()
    conv_backend.install()
    rnn_cells.install()
    group_norm_autograd.install()  # GroupNorm's gradients in CPU's memory format
    int_histc.install()  # integer torch.histc, as CUDA has it (MoE token counts)
    compile_inputs.install()
    autograd_threads.install()
    op_policy.push_to_driver()
    from torch_neuronx.eager import perf_hook

    perf_hook.install()  # the performance model (torch_neuronx.perf): costs nothing until measured
    from torch_neuronx import profiler

    profiler.install()  # torch.profiler's PrivateUse1 activity: modeled device events
    op_policy.route_structured_ops_whole()
    _C._set_strict(env.flag("TORCH_NEURONX_STRICT", False))
    # unboxed kernels for the hottest ops (csrc/eager/fast_*.cpp); 0 = every op generic
    _C._set_eager_fast_path(env.flag("TORCH_NEURONX_EAGER_FAST_PATH", True))
    # TorchNeuron's switches that change nothing here (docs/decisions.md) are still validated,
    # so a mistyped value is an error here as it would be there
    env.flag("TORCH_NEURONX_COMPLEX_DECOMPOSE", True)
    env.flag("NEURON_LAUNCH_BLOCKING", True)

    # torch.neuron carries the compile layer's per-graph records, as torch_neuronx does; the
    # runtime layer itself never imports compile/ (dynamo_metrics imports no Dynamo)
    from torch_neuronx.compile import dynamo_metrics

    runtime.get_dynamo_metrics = dynamo_metrics.get_dynamo_metrics
    runtime.reset_dynamo_metrics = dynamo_metrics.reset_dynamo_metrics

    if torch.distributed.is_available():
        from torch_neuronx import distributed

        distributed.register()


_install()
del _install

from torch_neuronx import metrics, runtime  # noqa: E402
from torch_neuronx.compile.dynamo_metrics import (  # noqa: E402
    get_dynamo_metrics,
    reset_dynamo_metrics,
)
from torch_neuronx.eager.tracking import (  # noqa: E402
    clear_op_tracking,
    get_executed_ops,
    get_fallback_ops,
    get_fallback_sources,
)
from torch_neuronx.runtime import *  # noqa: E402,F401,F403  (torch.neuron's API, name for name)


def is_neuron_runtime_initialized() -> bool:
    return is_initialized()  # noqa: F405


__all__ = [
    *runtime.__all__,
    "clear_op_tracking",
    "get_dynamo_metrics",
    "get_executed_ops",
    "get_fallback_ops",
    "get_fallback_sources",
    "is_neuron_runtime_initialized",
    "metrics",
    "reset_dynamo_metrics",
]

#: the package's public subpackages (layers), listed by dir() once imported
_SUBPACKAGES = ("compile", "distributed", "eager", "nki", "perf", "runtime", "testing", "tools")


def __dir__():
    names = set(__all__) | {n for n in globals() if n.startswith("__")}
    names |= {n for n in _SUBPACKAGES if n in globals()}
    return sorted(names | {"nki_op"})


def __getattr__(name):
    # TorchNeuron's `from torch_neuronx import nki_op`: the NKI layer (torch_neuronx.nki, above
    # every other layer) loads on first use, so autoloading never imports it
    if name == "nki_op":
        from torch_neuronx.nki import nki_op

        return nki_op
    raise AttributeError(f"module 'torch_neuronx' has no attribute {name!r}")
