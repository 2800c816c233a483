"""``nki.isa``: the NeuronCore's instructions, simulated one vectorised torch op each.

Signatures follow AWS's NKI 0.7 (Neuron 2.33) API: the destination comes first (``dst``) and
is written in place. Every instruction checks the rules its AWS page states (buffers,
partition and free sizes, dtypes, PSUM banks) and raises :class:`NkiValidationError` naming
the kernel line. The legacy ``mask=`` keyword (``nl.arange`` predicates) is accepted.

One module per instruction family: ``enums`` (NKI's enums), ``data_movement`` (DMA, copies,
memset), ``matmul`` (Tensor Engine: matmul, transpose), ``mx`` (microscaling: quantize_mx, nc_matmul_mx), ``vector_alu`` (element-wise and reductions),
``activations`` (Scalar Engine), ``patterns`` (iota, affine/range/select-reduce selection), ``random`` (dropout), ``prng``
(the engines' generators: rng, rand2, seeds and states), ``segments`` (nonzero_with_count,
sequence_bounds), ``shuffle`` (nc_stream_shuffle), ``activate2`` (NeuronCore-v4 activation with
two ALU stages, nl.prelu), ``gather`` (nc_n_gather, local_gather, topk), ``statistics``
(batch-norm), ``scans`` (tensor-tensor scan, cumulative), ``top8`` (max8, find/replace
index8), ``accumulators`` (the engines' reduce registers), ``registers`` (sequencer registers,
dma_compute, core_barrier, sendrecv), ``unsupported`` (documented
names that are not simulated). What every instruction does around its math (operand checks,
cost record) is in ``nki/isa_common.py``.
"""

from __future__ import annotations

from ..errors import NkiValidationError
from ..instructions import NkiInstruction, returning_handle
from .activate2 import activate2
from .activations import activation, activation_reduce, exponential, reciprocal
from .data_movement import dma_copy, dma_transpose, memset, tensor_copy, tensor_copy_predicated
from .enums import (  # noqa: F401 - nki.isa's names, including the engine aliases
    dge_mode,
    dma_engine,
    engine,
    get_nc_sub_version,
    get_nc_version,
    gpsimd_engine,
    matmul_perf_mode,
    nc_version,
    oob_mode,
    reduce_cmd,
    scalar_engine,
    tensor_engine,
    unknown_engine,
    vector_engine,
)
from .gather import local_gather, nc_n_gather, topk
from .matmul import nc_matmul, nc_transpose
from .mx import nc_matmul_mx, quantize_mx
from .patterns import affine_select, iota, range_select, select_reduce
from .prng import rand2, rand_get_state, rand_set_state, rng, set_rng_seed
from .random import dropout
from .registers import (  # noqa: F401
    VirtualRegister,
    core_barrier,
    dma_compute,
    register_alloc,
    register_load,
    register_move,
    register_store,
    sendrecv,
)
from .scans import tensor_scalar_cumulative, tensor_tensor_scan
from .segments import nonzero_with_count, sequence_bounds
from .shuffle import nc_stream_shuffle
from .statistics import bn_aggr, bn_stats
from .top8 import max8, nc_find_index8, nc_match_replace8
from .unsupported import NOT_SIMULATED
from .vector_alu import (
    scalar_tensor_tensor,
    tensor_partition_reduce,
    tensor_reduce,
    tensor_scalar,
    tensor_scalar_reduce,
    tensor_tensor,
)

globals().update(NOT_SIMULATED)  # a documented name that is not simulated raises when called

__all__ = [
    "engine",
    "reduce_cmd",
    "dge_mode",
    "oob_mode",
    "matmul_perf_mode",
    "nc_version",
    "dma_engine",
    "NkiValidationError",
    "get_nc_version",
    "get_nc_sub_version",
    "dma_copy",
    "dma_transpose",
    "tensor_copy",
    "memset",
    "tensor_copy_predicated",
    "nc_matmul",
    "nc_transpose",
    "nc_matmul_mx",
    "quantize_mx",
    "tensor_tensor",
    "tensor_scalar",
    "scalar_tensor_tensor",
    "tensor_reduce",
    "tensor_partition_reduce",
    "tensor_scalar_reduce",
    "activation",
    "activation_reduce",
    "reciprocal",
    "exponential",
    "iota",
    "affine_select",
    "select_reduce",
    "bn_stats",
    "bn_aggr",
    "tensor_tensor_scan",
    "tensor_scalar_cumulative",
    "max8",
    "nc_find_index8",
    "nc_match_replace8",
    "range_select",
    "dropout",
    "activate2",
    "nc_n_gather",
    "topk",
    "local_gather",
    "nc_stream_shuffle",
    "nonzero_with_count",
    "sequence_bounds",
    "rng",
    "rand2",
    "set_rng_seed",
    "rand_set_state",
    "rand_get_state",
    "register_alloc",
    "register_move",
    "register_load",
    "register_store",
    "dma_compute",
    "core_barrier",
    "sendrecv",
]

# every instruction returns its NkiInstruction handle (``.depends_on(...)``: nki/instructions.py)
for _n in __all__:
    _f = globals()[_n]
    if callable(_f) and _n not in ("NkiValidationError", "get_nc_version", "get_nc_sub_version"):
        if not isinstance(_f, type) and type(_f).__name__ == "function":
            globals()[_n] = returning_handle(_f)
__all__ += ["NkiInstruction", "VirtualRegister"]
