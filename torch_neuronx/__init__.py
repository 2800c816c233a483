"""torch_neuronx: PyTorch's `neuron` device (AWS Trainium) on an emulated NeuronCore.

Importing this package (PyTorch does it at `import torch` through the `torch.backends` entry
point) loads the C++ driver, names PrivateUse1 `neuron`, creates `torch.neuron`, installs the
op policy and registers the `neuron` distributed backend.
"""
from __future__ import annotations

import os as _os


def _autoload() -> None:
    """Entry point for PyTorch's backend autoloading: importing this package registers it.

    Defined before `import torch`: when torch_neuronx is imported first, `import torch`
    autoloads this (partially initialised) module and looks this name up."""


import torch as _torch

__version__ = "0.1.0"

from torch_neuronx import _C  # noqa: E402  (the driver: allocator, guard, generators, kernels)
from torch_neuronx.runtime import topology as _topology  # noqa: E402

_topo = _topology.current()
_C._configure(_topo.device_count, _topo.hbm_per_core, _topo.profile.name)

if _torch._C._get_privateuse1_backend_name() != "neuron":
    _torch.utils.rename_privateuse1_backend("neuron")

from torch_neuronx import neuron as _neuron_module  # noqa: E402

if not hasattr(_torch, "neuron"):
    _torch._register_device_module("neuron", _neuron_module)
    _torch.utils.generate_methods_for_privateuse1_backend(
        for_tensor=True, for_module=True, for_storage=True)

from torch_neuronx.eager import op_policy as _op_policy  # noqa: E402
from torch_neuronx.runtime import printing as _printing  # noqa: E402

_printing.install()

from torch_neuronx.runtime import module_ties as _module_ties  # noqa: E402

_module_ties.install()

from torch_neuronx.eager import unsupported_features as _unsupported  # noqa: E402

_unsupported.install()

from torch_neuronx.eager import rnn_cells as _rnn_cells  # noqa: E402

_rnn_cells.install()

from torch_neuronx import compile_inputs as _compile_inputs  # noqa: E402

_compile_inputs.install()

from torch_neuronx.eager import autograd_threads as _autograd_threads  # noqa: E402

_autograd_threads.install()

_op_policy.push_to_driver()
_op_policy.route_structured_ops_whole()
_C._set_strict(_os.environ.get("TORCH_NEURONX_STRICT", "0").lower() in ("1", "true", "yes"))

from torch_neuronx import metrics  # noqa: E402,F401
from torch_neuronx.eager.tracking import (  # noqa: E402,F401
    clear_op_tracking,
    get_executed_ops,
    get_fallback_ops,
)
from torch_neuronx.neuron import *  # noqa: E402,F401,F403
from torch_neuronx.neuron import (  # noqa: E402,F401
    get_dynamo_metrics,
    reset_dynamo_metrics,
)


def is_neuron_runtime_initialized() -> bool:
    return is_initialized()  # noqa: F405


def _register_distributed() -> None:
    from torch_neuronx import distributed as _dist

    _dist.register()


if _torch.distributed.is_available():
    _register_distributed()
