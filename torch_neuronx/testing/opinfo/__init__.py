"""Differential correctness harness: PyTorch's OpInfo database, neuron against CPU.

Every sample of every OpInfo in ``op_db`` (shipped in the torch wheel) is generated on
CPU, cloned to the device under test with its exact memory layout (sizes, strides,
storage offset, overlap), run on both, and compared:

* ``forward``  - the functional variant: same structure, dtype, shape and device type,
  values within the OpInfo tolerances, strides for elementwise ops (TensorIterator
  defines them), and for every op when the sample was put in a memory layout
  (``layouts.layout_sample``; exceptions in ``STRIDES_DIFFER``);
* ``inplace``  - ``op.inplace_variant``: returns its input, same values;
* ``out``      - ``out=`` (``op.supports_out``): returns the given ``out`` tensors, same
  values;
* ``grad``     - backward with identical random ``grad_outputs``; input gradients
  compared.

A sample that raises on CPU is not a neuron failure: it is recorded as ``cpu_error`` and
left out of the pass rates. Ops whose output is random or undefined (the OpInfo
database marks them by skipping ``TestCommon.test_compare_cpu``) are compared on
structure, dtype, shape and device only and are counted separately (``relaxed``).

float64 and complex128 (categories ``float64``, ``complex128``, ``grad64``): 64-bit
floating arithmetic on neuron has float32 precision by design (TorchNeuron behaviour), so
their results must have CPU's dtype and shape exactly and values within a float32-level
tolerance (``tolerance``; stated in docs/eager.md).

The device under test is ``neuron`` unless ``TORCH_NEURONX_OPINFO_DEVICE`` names
another one; ``TORCH_NEURONX_OPINFO_DEVICE=cpu`` compares CPU against CPU, which checks
the harness itself (everything must pass).

Used by ``tests/eager/test_opinfo.py`` (CI sample / full sweep),
``tests/eager/test_random_ops.py`` and ``torch_neuronx/tools/coverage_sweep.py`` (writes
``docs/coverage.md``). It needs the ``test`` extra: ``torch.testing._internal`` imports numpy.

Modules: ``database`` (op_db / module_db, device under test), ``categories`` (dtype
categories), ``tolerances`` (relaxed ops, tolerances), ``transfer`` (cloning samples to a
device), ``comparison`` (device result against CPU's), ``results``, ``checks`` (one sample per
variant), ``selection`` (seeded samples, plans; which samples also run in other memory layouts),
``layouts`` (a sample in another memory layout), ``runner`` (all samples of an OpInfo or a
module), ``known_failures`` (expected failures and crashes). Every name is importable from
here.
"""

from __future__ import annotations

from .categories import (
    BFLOAT16,
    CATEGORIES,
    FLOAT32,
    INT_DTYPES,
    WIDE_CATEGORIES,
    WIDE_DTYPES,
    category_dtypes,
    cpu_backward_dtypes,
    cpu_dtypes,
)
from .checks import (
    VARIANT_CHECKS,
    _call,  # noqa: F401 - used by tests/eager/test_opinfo.py
    check_forward,
    check_grad,
    check_inplace,
    check_out,
    grad_targets,
    quiet,
)
from .comparison import Mismatch, compare, error_reason, to_host
from .database import (
    MODULE_NAMES,
    device_under_test,
    load_module_db,
    load_op_db,
    op_key,
    ops_by_key,
)
from .known_failures import KNOWN_CRASHES, KNOWN_FAILURES
from .layouts import LAYOUT_NAMES, has_internal_overlap, layout_sample, out_in_layout
from .results import (
    CPU_ERROR,
    FAIL,
    PASS,
    SKIP,
    UNSUPPORTED,
    Result,
    device_error,
    dtype_name,
    summarize_failures,
)
from .runner import SampleLike, run_module, run_op_category
from .selection import (
    CI_PLAN,
    FULL_PLAN,
    Plan,
    generate_samples,
    no_test_fn_tracking,
    plan_from_env,
    seed_host,
)
from .tolerances import (
    DEFAULT_TOL,
    F64_POLICY,
    STRIDES_DIFFER,
    relaxed_reason,
    strides_compared,
    strides_defined,
    tolerance,
)
from .transfer import (
    Call,
    clone_sample,
    clone_tensor,
    clone_value,
    describe_sample,
    expected_device_type,
    iter_tensors,
)

__all__ = [
    "BFLOAT16",
    "CATEGORIES",
    "FLOAT32",
    "INT_DTYPES",
    "WIDE_CATEGORIES",
    "WIDE_DTYPES",
    "category_dtypes",
    "cpu_backward_dtypes",
    "cpu_dtypes",
    "VARIANT_CHECKS",
    "check_forward",
    "check_grad",
    "check_inplace",
    "check_out",
    "grad_targets",
    "quiet",
    "Mismatch",
    "compare",
    "error_reason",
    "to_host",
    "MODULE_NAMES",
    "device_under_test",
    "load_module_db",
    "load_op_db",
    "op_key",
    "ops_by_key",
    "KNOWN_CRASHES",
    "KNOWN_FAILURES",
    "LAYOUT_NAMES",
    "has_internal_overlap",
    "layout_sample",
    "out_in_layout",
    "CPU_ERROR",
    "FAIL",
    "PASS",
    "Result",
    "SKIP",
    "UNSUPPORTED",
    "device_error",
    "dtype_name",
    "summarize_failures",
    "SampleLike",
    "run_module",
    "run_op_category",
    "CI_PLAN",
    "FULL_PLAN",
    "Plan",
    "generate_samples",
    "no_test_fn_tracking",
    "plan_from_env",
    "seed_host",
    "DEFAULT_TOL",
    "F64_POLICY",
    "STRIDES_DIFFER",
    "strides_compared",
    "relaxed_reason",
    "strides_defined",
    "tolerance",
    "Call",
    "clone_sample",
    "clone_tensor",
    "clone_value",
    "describe_sample",
    "expected_device_type",
    "iter_tensors",
]
