"""TorchNeuron's eager op policy, as one data table.

Every ATen op on neuron tensors is one of:
- ``native``: lowered for the NeuronCore (on the emulated core: runs on device memory, no copies);
- ``fallback``: no Neuron lowering; runs through the CPU fallback, warns once per op, and is
  recorded in ``torch_neuronx.get_fallback_ops()``; an error under ``TORCH_NEURONX_STRICT=1``;
- ``unsupported``: raises a clear error.

The native inventory starts from TorchNeuron's (its StableHLO-lowered ops, C++ layout ops and
Python ops; public source in docs/sources.md, "Eager execution and the op policy"), extended
with the element-wise, reduction and layout ops that map one-to-one onto StableHLO primitives.
The explicit CPU fallbacks are TorchNeuron's linalg decompositions. Anything not listed falls
back, as on TorchNeuron. Keys are op names without overload ("aten::add"); an entry with an
overload ("aten::add.Tensor") takes precedence.

Besides the status, the table holds the other per-op facts every layer asks about, so each is
written down once: the NeuronCore engine an op's work lands on (for the performance model),
which ops may mix neuron and CPU tensors, which only move bits (float64 stays float64), and
which are metadata queries with no kernel. ``push_to_driver`` hands the driver (csrc/eager/
op_table.cpp) what its eager path needs, once, at import.
"""

from __future__ import annotations

from torch_neuronx.runtime.engines import Engine
from torch_neuronx.runtime.op_names import split, strip_overload

NATIVE = "native"
FALLBACK = "fallback"
UNSUPPORTED = "unsupported"

_STATUS_CODE = {NATIVE: 0, FALLBACK: 1, UNSUPPORTED: 2}

# --- engines of a NeuronCore: runtime/engines.py (docs/sources.md: the NKI architecture guide)
#: the engines an op's work may land on (CPU fallbacks: Engine.host)
ENGINES = (
    Engine.tensor,
    Engine.vector,
    Engine.scalar,
    Engine.gpsimd,
    Engine.dma,
    Engine.collective,
    Engine.host,
)

# --- native inventory, grouped by the NeuronCore engine that does the work ------------------
# (title, engine, op names). The title is the reason users see ("native: <title>"); a title may
# span two groups when its ops land on different engines (convolution vs. pooling).
_NATIVE_GROUPS: list[tuple[str, Engine, str]] = [
    (
        "element-wise unary (ScalarE/VectorE)",
        Engine.scalar,
        """
        abs absolute acos acosh asin asinh atan atanh ceil cos cosh deg2rad digamma erf erfc
        erfinv exp exp2 expm1 floor frac lgamma log log10 log1p log2 logit neg negative
        reciprocal round rsqrt sigmoid sign sgn signbit sin sinc sinh sqrt square tan tanh trunc
        fix relu relu6 gelu silu mish hardtanh hardsigmoid hardswish elu celu selu leaky_relu
        softplus softshrink hardshrink threshold logical_not bitwise_not isnan isinf isfinite
        isneginf isposinf isreal nan_to_num rad2deg positive conj_physical i0 glu prelu
        _prelu_kernel rrelu_with_noise log_sigmoid_forward mvlgamma polygamma special_erfcx
        special_i0e special_i1 special_i1e special_ndtr special_ndtri special_log_ndtr
        special_entr special_xlog1py special_sinc xlogy""",
    ),
    (
        "element-wise binary / ternary",
        Engine.vector,
        """
        add sub subtract rsub mul multiply div divide true_divide floor_divide remainder fmod pow
        float_power atan2 arctan2 hypot maximum minimum fmax fmin copysign nextafter ldexp
        logaddexp logaddexp2 lerp addcmul addcdiv where clamp clamp_min clamp_max clip
        heaviside eq ne lt le gt ge equal logical_and logical_or logical_xor bitwise_and
        bitwise_or bitwise_xor bitwise_left_shift bitwise_right_shift __lshift__ __rshift__
        __and__ __or__ __xor__ __ilshift__ __irshift__ isclose masked_fill gcd lcm""",
    ),
    (
        "activation / loss backward (VectorE)",
        Engine.vector,
        """
        threshold_backward gelu_backward silu_backward sigmoid_backward tanh_backward
        hardtanh_backward elu_backward softplus_backward leaky_relu_backward hardswish_backward
        hardsigmoid_backward mish_backward log_sigmoid_backward glu_backward softshrink_backward
        hardshrink_backward logit_backward nll_loss_forward nll_loss_backward nll_loss2d_forward
        nll_loss2d_backward mse_loss mse_loss_backward l1_loss smooth_l1_loss
        smooth_l1_loss_backward huber_loss huber_loss_backward binary_cross_entropy
        binary_cross_entropy_backward binary_cross_entropy_with_logits soft_margin_loss
        soft_margin_loss_backward kl_div _prelu_kernel_backward rrelu_with_noise_backward""",
    ),
    (
        "matmul family (TensorE)",
        Engine.tensor,
        """
        mm bmm addmm addbmm baddbmm mv addmv dot vdot matmul linear linear_backward addr outer
        _addmm_activation einsum tensordot _scaled_dot_product_flash_attention_for_cpu
        _scaled_dot_product_flash_attention_for_cpu_backward
        _scaled_dot_product_fused_attention_overrideable _grouped_mm""",
    ),
    (
        "reductions",
        Engine.vector,
        """
        sum mean nansum prod amax amin max min aminmax argmax argmin all any logsumexp norm
        linalg_vector_norm std var std_mean var_mean count_nonzero cumsum cumprod cummax cummin
        _cummax_helper _cummin_helper logcumsumexp topk sort argsort histc _softmax
        _log_softmax _softmax_backward_data _log_softmax_backward_data softmax log_softmax
        median nanmedian kthvalue mode renorm""",
    ),
    (
        "normalisation",
        Engine.vector,
        """
        native_layer_norm native_layer_norm_backward _fused_rms_norm _fused_rms_norm_backward
        native_batch_norm native_batch_norm_backward _native_batch_norm_legit
        _native_batch_norm_legit_no_training _native_batch_norm_legit_functional batch_norm_stats
        batch_norm_elemt batch_norm_backward_elemt batch_norm_backward_reduce
        batch_norm_gather_stats_with_counts native_group_norm native_group_norm_backward
        _batch_norm_with_update _batch_norm_no_update batch_norm_backward""",
    ),
    (
        "convolution and pooling",
        Engine.tensor,
        """
        convolution convolution_backward _convolution convolution_overrideable
        convolution_backward_overrideable _slow_conv2d_forward _slow_conv2d_backward
        mkldnn_convolution slow_conv3d_forward slow_conv_transpose2d slow_conv_transpose3d
        slow_conv_dilated2d slow_conv_dilated3d _nnpack_spatial_convolution""",
    ),
    (
        "convolution and pooling",
        Engine.vector,
        """
        max_pool2d_with_indices max_pool2d_with_indices_backward max_pool3d_with_indices
        max_pool3d_with_indices_backward avg_pool2d avg_pool2d_backward avg_pool3d
        avg_pool3d_backward _adaptive_avg_pool2d _adaptive_avg_pool2d_backward
        _adaptive_avg_pool3d _adaptive_avg_pool3d_backward adaptive_max_pool2d
        adaptive_max_pool2d_backward adaptive_max_pool3d adaptive_max_pool3d_backward
        upsample_nearest1d upsample_nearest2d upsample_nearest3d upsample_linear1d
        upsample_bilinear2d upsample_trilinear3d upsample_bicubic2d _upsample_nearest_exact1d
        _upsample_nearest_exact2d _upsample_nearest_exact3d upsample_nearest1d_backward
        upsample_nearest2d_backward upsample_nearest3d_backward upsample_linear1d_backward
        upsample_bilinear2d_backward upsample_trilinear3d_backward upsample_bicubic2d_backward
        _upsample_nearest_exact1d_backward _upsample_nearest_exact2d_backward
        _upsample_nearest_exact3d_backward _upsample_bilinear2d_aa _upsample_bicubic2d_aa
        _upsample_bilinear2d_aa_backward _upsample_bicubic2d_aa_backward _upsample_lanczos2d_aa
        _upsample_lanczos2d_aa_backward grid_sampler_2d grid_sampler_2d_backward
        _weight_norm_interface _weight_norm_interface_backward""",
    ),
    ("convolution and pooling", Engine.dma, "im2col col2im"),  # patch rearrangement: data movement
    # Random bits and the dropout mask multiply are element-wise work.
    (
        "dropout and random (RNG engine)",
        Engine.vector,
        """
        native_dropout native_dropout_backward bernoulli normal uniform random randperm
        exponential geometric cauchy log_normal multinomial rand randn randint rand_like
        randn_like randint_like _fused_dropout poisson""",
    ),
    (
        "embedding, indexing, scatter/gather (DMA + GpSimd)",
        Engine.gpsimd,
        """
        embedding embedding_dense_backward embedding_backward _embedding_bag
        _embedding_bag_backward _embedding_bag_dense_backward _embedding_bag_per_sample_weights_backward
        index index_select index_select_backward index_add index_copy index_fill index_put
        _index_put_impl_ index_reduce gather scatter scatter_add scatter_reduce masked_scatter
        masked_select nonzero nonzero_static one_hot take take_along_dim put searchsorted
        bucketize _unique2 unique_dim unique_consecutive _unique bincount""",
    ),
    (
        "shape, layout, creation and copies",
        Engine.dma,
        """
        empty empty_like empty_strided new_empty new_empty_strided view as_strided
        _reshape_alias unfold resize_ set_ copy_ _copy_from _copy_from_and_resize _to_copy clone
        _lazy_clone contiguous _local_scalar_dense record_stream repeat repeat_interleave flip roll rot90 tril
        triu cat stack vstack hstack dstack constant_pad_nd reflection_pad1d reflection_pad2d
        reflection_pad3d replication_pad1d replication_pad2d replication_pad3d
        reflection_pad1d_backward reflection_pad2d_backward reflection_pad3d_backward
        replication_pad1d_backward replication_pad2d_backward replication_pad3d_backward
        slice_backward select_backward slice_scatter select_scatter diagonal_scatter
        as_strided_scatter diag_embed diagonal_backward arange linspace logspace eye full ones
        zeros full_like ones_like zeros_like scalar_tensor fill fill_ zero_ lift_fresh
        lift_fresh_copy alias detach expand permute transpose t narrow narrow_copy select slice
        split split_with_sizes unbind chunk squeeze unsqueeze flatten unflatten reshape view_as
        movedim _unsafe_view unsafe_split unsafe_split_with_sizes diag tril_indices triu_indices
        _pin_memory pin_memory is_pinned _has_compatible_shallow_copy_type resize_as_
        _resize_output_ _efficientzerotensor complex polar view_as_real view_as_complex real
        imag _conj _neg_view _conj_physical angle""",
    ),
    (
        "optimizers and AMP (fused / foreach kernels)",
        Engine.vector,
        """
        _foreach_add _foreach_add_ _foreach_sub _foreach_sub_ _foreach_mul _foreach_mul_
        _foreach_div _foreach_div_ _foreach_addcmul _foreach_addcmul_ _foreach_addcdiv
        _foreach_addcdiv_ _foreach_sqrt _foreach_sqrt_ _foreach_lerp _foreach_lerp_
        _foreach_neg _foreach_neg_ _foreach_norm _foreach_maximum _foreach_maximum_
        _foreach_minimum _foreach_minimum_ _foreach_copy_ _foreach_zero_ _foreach_abs
        _foreach_abs_ _foreach_exp _foreach_exp_ _foreach_reciprocal _foreach_reciprocal_
        _foreach_sign _foreach_sign_ _foreach_pow _foreach_pow_ _foreach_clamp_min
        _foreach_clamp_min_ _foreach_clamp_max _foreach_clamp_max_ _foreach_sigmoid
        _foreach_sigmoid_ _foreach_log _foreach_log_ _foreach_rsqrt _foreach_rsqrt_
        _foreach_max _fused_adam_ _fused_adamw_ _fused_sgd_ _fused_adagrad_
        _amp_foreach_non_finite_check_and_unscale_ _amp_update_scale_""",
    ),
    (
        "attention and recurrent cells",
        Engine.tensor,
        """
        _native_multi_head_attention _transform_bias_rescale_qkv _masked_softmax
        _masked_softmax_backward _thnn_fused_lstm_cell _thnn_fused_gru_cell
        _thnn_fused_lstm_cell_backward_impl _thnn_fused_gru_cell_backward""",
    ),
    (
        "collectives (distributed communication ops)",
        Engine.collective,
        """
        _c10d_functional::all_reduce _c10d_functional::all_reduce_
        _c10d_functional::all_gather_into_tensor _c10d_functional::reduce_scatter_tensor
        _c10d_functional::all_to_all_single _c10d_functional::wait_tensor
        _c10d_functional::broadcast _c10d_functional::broadcast_""",
    ),
]

# --- explicit CPU fallbacks (TorchNeuron's linalg decompositions) --------------------------
_LINALG_REASON = (
    "TorchNeuron runs this linear-algebra decomposition on the host CPU "
    "(explicit CPU fallback); results are copied back to the device"
)
_FALLBACK: dict[str, str] = {
    name: _LINALG_REASON
    for name in """linalg_qr _linalg_svd _linalg_eigh linalg_cholesky_ex linalg_inv_ex
    linalg_lu_factor_ex linalg_ldl_factor_ex _linalg_slogdet _linalg_det cholesky_inverse
    triangular_solve linalg_solve_triangular _linalg_solve_ex linalg_lu linalg_lu_solve
    linalg_eig _linalg_eigvals linalg_householder_product geqrf ormqr cholesky_solve
    linalg_ldl_solve lu_unpack linalg_matrix_exp""".split()
}
# FFT: the c2c/r2c/c2r primitives are native (decomposed into TensorE matmuls by the
# compiler); everything else in torch.fft follows the fallback policy.
_NATIVE_EXTRA = "_fft_r2c _fft_c2r _fft_c2c".split()

_UNSUPPORTED: dict[str, str] = {
    "aten::_nested_tensor_from_tensor_list": "torch.nested tensors are not supported on neuron; pad to a dense tensor",
    "aten::_to_sparse": "torch.sparse tensors are not supported on neuron; keep sparse tensors on CPU",
    "aten::to_sparse": "torch.sparse tensors are not supported on neuron; keep sparse tensors on CPU",
    "aten::_to_sparse_csr": "torch.sparse tensors are not supported on neuron; keep sparse tensors on CPU",
    "aten::to_mkldnn": "MKL-DNN layouts are CPU-only; keep this tensor on CPU",
}
# Quantized tensors (torch.quint8/qint8/qint32, per-tensor and per-channel affine) have no
# neuron representation: the ops that create them are refused with a clear error (the driver
# also refuses any op that would return one, and the QuantizedPrivateUse1 key).
_QUANTIZED_REASON = (
    "quantized tensors are not supported on neuron; quantize and run quantized ops on CPU tensors"
)
_UNSUPPORTED.update(
    {
        f"aten::{n}": _QUANTIZED_REASON
        for n in """quantize_per_tensor quantize_per_tensor_dynamic quantize_per_channel
        _empty_affine_quantized _empty_per_channel_affine_quantized
        _make_per_tensor_quantized_tensor _make_per_channel_quantized_tensor""".split()
    }
)

DEFAULT_FALLBACK_REASON = "no Neuron lowering for this op; it runs via CPU fallback"


# --- other per-op facts (exact op names, without overload) ------------------------------------
# Ops whose tensors may mix neuron and (non-scalar) CPU tensors, as on CUDA: copies between
# devices, and indexing with CPU indices.
MIXED_DEVICE_OK: frozenset[str] = frozenset(
    f"aten::{n}"
    for n in """
    copy_ _copy_from _copy_from_and_resize _to_copy index index_put index_put_ _index_put_impl_
    set_ lift_fresh _has_compatible_shallow_copy_type equal""".split()
)

# Ops that only move, select, compare or fill bits: float64 stays float64 through them (every
# other float64 op computes in float32 on the NeuronCore, which has no fp64 engine).
DATA_MOVEMENT: frozenset[str] = frozenset(
    f"aten::{n}"
    for n in """
    copy_ _copy_from _copy_from_and_resize _to_copy clone _lazy_clone contiguous fill_ zero_
    _local_scalar_dense cat stack index_select index gather masked_fill_ masked_fill flip roll
    repeat set_ resize_ as_strided_ _unsafe_view view narrow_copy constant_pad_nd tril triu
    select slice slice_scatter select_scatter index_put_ _index_put_impl_ scatter scatter_ where
    eq ne equal isnan _to_dense detach alias expand permute transpose unfold split
    split_with_sizes chunk unbind t empty_like full ones_like zeros_like full_like masked_select
    nonzero lift_fresh lift_fresh_copy diagonal squeeze unsqueeze reshape _reshape_alias sort
    argsort topk max min amax amin unique_consecutive _unique2 view_as_real view_as_complex abs
    neg maximum minimum clamp clamp_ sign isinf isfinite _efficientzerotensor bernoulli_
    random_ aminmax median nanmedian kthvalue mode cummax cummin _cummax_helper _cummin_helper
    msort
    take put index_fill index_copy masked_scatter _unsafe_index _unsafe_masked_index
    pixel_shuffle pixel_unshuffle channel_shuffle native_channel_shuffle im2col
    reflection_pad1d reflection_pad2d reflection_pad3d replication_pad1d replication_pad2d
    replication_pad3d upsample_nearest1d upsample_nearest2d upsample_nearest3d
    _upsample_nearest_exact1d _upsample_nearest_exact2d _upsample_nearest_exact3d
    max_unpool2d max_unpool3d _unique unique_dim unique_dim_consecutive complex conj_physical
    _conj_physical
    relu hardtanh threshold clamp_min clamp_max fmax fmin heaviside nan_to_num argmax argmin
    max_pool1d max_pool1d_with_indices max_pool2d_with_indices max_pool3d_with_indices
    adaptive_max_pool1d adaptive_max_pool2d adaptive_max_pool3d fractional_max_pool2d
    fractional_max_pool3d
    lt le gt ge logical_and logical_or logical_xor logical_not any all count_nonzero isposinf
    isneginf isreal signbit searchsorted bucketize isin
    hash_tensor frexp copysign nextafter""".split()
)
# The selections above (sort ... msort, relu ... fractional_max_pool3d) return input elements
# exactly: a backward that finds them again by equality, e.g. aminmax's or median's, relies on
# that, and so does a user who compares a maximum with the tensor it came from. Comparisons and
# tests (lt ... isin) read the exact values, so they agree with eq/ne and with sort's order
# (docs/decisions.md). Bit-level ops (hash_tensor ... nextafter) read or build the bits
# themselves. index_put_/put_ with accumulate=True add in 64 bits (grouped with the indexing
# writes; slightly more precise than the device, like a kernel's 64-bit intermediates).
# Selections decided by an argument (scatter_reduce/index_reduce with "amax"/"amin",
# segment_reduce with "max"/"min", norms of order +-inf) are exempted per call in
# csrc/eager/kernel.cpp (selects_by_argument).

# Ops that build float64/complex128 values from Python numbers (ranges): exact, like
# torch.tensor. A 64-bit result of a creation op is always an explicit request (dtype= or
# torch.set_default_dtype), the case the policy already exempts for ops with a dtype= argument
# (the composite torch.linspace(..., dtype=torch.float64) reaches the driver as linspace.out,
# without it).
CREATION_FROM_NUMBERS: frozenset[str] = frozenset(
    f"aten::{n}" for n in "arange range linspace logspace".split()
)

# Shape/metadata queries and runtime asserts: no kernel runs for them (a compiled graph's
# legality check skips them).
METADATA_ONLY: frozenset[str] = frozenset(
    f"aten::{n}"
    for n in """
    sym_size sym_stride sym_numel sym_storage_offset _assert_async _functional_assert_async
    _assert_scalar _functional_assert_scalar _assert_tensor_metadata
    _functional_sym_constrain_range sym_constrain_range sym_constrain_range_for_size
    _functional_sym_constrain_range_for_size""".split()
)

# Ops whose output shape depends on the values of their inputs: the host must read a count from
# the device (a host sync) before it can go on. The one list: torch_neuronx.evaluate reads it in
# both its modes (evaluate/collector.py on a measured run, evaluate/fake.py on a fake-tensor
# projection), through is_data_dependent. Every entry is an ATen op that reaches the device
# kernel (no CompositeImplicitAutograd kernel), so both modes see the same ops: argwhere
# decomposes into nonzero, torch.unique calls _unique2 / unique_dim (there is no aten::unique).
# repeat_interleave.Tensor (repeats given as a tensor) sizes its output by their sum; bincount
# by the largest input value.
DATA_DEPENDENT: frozenset[str] = frozenset(
    f"aten::{n}"
    for n in """
    nonzero masked_select _unique _unique2 unique_consecutive unique_dim unique_dim_consecutive
    repeat_interleave bincount""".split()
)


def _build() -> tuple[dict[str, tuple[str, str]], dict[str, Engine]]:
    table: dict[str, tuple[str, str]] = {}
    engines: dict[str, Engine] = {}
    for group, engine, names in _NATIVE_GROUPS:
        for n in names.split():
            key = n if "::" in n else f"aten::{n}"
            table[key] = (NATIVE, f"native: {group}")
            engines[key] = engine
    for n in _NATIVE_EXTRA:
        table[f"aten::{n}"] = (NATIVE, "native: FFT primitive (c2c/r2c/c2r), lowered to TensorE")
        engines[f"aten::{n}"] = Engine.tensor
    for n, reason in _FALLBACK.items():
        table[f"aten::{n}"] = (FALLBACK, reason)
        engines[f"aten::{n}"] = Engine.host
    for n, reason in _UNSUPPORTED.items():
        table[n] = (UNSUPPORTED, reason)
    return table, engines


TABLE: dict[str, tuple[str, str]]
_ENGINE: dict[str, Engine]
TABLE, _ENGINE = _build()


def _strip_inplace(name: str) -> str:
    # In-place variants share the lowering of the functional op ("add_" -> "add").
    ns, _, base = name.partition("::")
    if (
        base.endswith("_")
        and not base.endswith("__")
        and not base.startswith("_foreach")
        and not base.startswith("_fused")
        and not base.startswith("_amp")
    ):
        return f"{ns}::{base[:-1]}"
    return name


def _table_key(op_name: str) -> str | None:
    """The TABLE entry that decides `op_name`: the overload's, the op's, or the functional op's
    for an in-place variant; None when the table does not name it."""
    if op_name in TABLE:
        return op_name
    base = strip_overload(op_name)
    for key in (base, _strip_inplace(base)):
        if key in TABLE:
            return key
    return None


def policy_for(op_name: str) -> tuple[str, str]:
    """(status, reason) for an op name like "aten::linalg_qr" or "aten::add.Tensor"."""
    key = _table_key(op_name)
    if key is not None:
        return TABLE[key]
    base = strip_overload(op_name)
    if not base.startswith("aten::") and "::" in base and not base.startswith("_c10d"):
        return NATIVE, "custom op: runs as registered by its library"
    return FALLBACK, DEFAULT_FALLBACK_REASON


def engine_for(op_name: str) -> Engine | None:
    """The NeuronCore engine that does `op_name`'s work (one of ENGINES): e.g. Engine.tensor
    (TensorE) for "aten::mm", Engine.host (CPU) for an op that runs via CPU fallback. None when
    it is unknown (custom ops) or the op cannot run on neuron (unsupported)."""
    key = _table_key(op_name)
    if key is not None:
        return _ENGINE.get(key)  # unsupported ops have no engine
    return Engine.host if policy_for(op_name)[0] == FALLBACK else None


def is_metadata_only(op_name: str) -> bool:
    """True for shape/metadata queries and runtime asserts ("aten::sym_size.int"): no kernel."""
    return strip_overload(op_name) in METADATA_ONLY


def is_data_dependent(op_name: str) -> bool:
    """True for an op whose output shape depends on its input values (DATA_DEPENDENT), e.g.
    "aten::nonzero" or "aten::repeat_interleave.Tensor"."""
    return strip_overload(op_name) in DATA_DEPENDENT


def all_aten_ops() -> list[str]:
    """Every ATen op name (without overload) known to the dispatcher."""
    import torch

    names = {
        strip_overload(n) for n in torch._C._dispatch_get_all_op_names() if n.startswith("aten::")
    }
    return sorted(names)


def compatibility_rows() -> list[dict[str, str]]:
    rows = []
    for name in all_aten_ops():
        status, reason = policy_for(name)
        rows.append({"op": name, "status": status, "reason": reason})
    return rows


def push_to_driver() -> None:
    """Hand the table to the C++ eager path, once: every dispatcher op (and every overload the
    table names) gets its status, reason and the two facts the driver acts on."""
    import torch

    from torch_neuronx import _C

    names = {strip_overload(n) for n in torch._C._dispatch_get_all_op_names()}
    names.update(k for k in TABLE if "." in k)
    keeps_64_bits = DATA_MOVEMENT | CREATION_FROM_NUMBERS
    names.update(MIXED_DEVICE_OK | keeps_64_bits)
    entries = []
    for name in names:
        status, reason = policy_for(name)
        base = strip_overload(name)
        # an in-place variant moves bits when its functional op does (eq_ like eq)
        moves_bits = base in keeps_64_bits or _strip_inplace(base) in keeps_64_bits
        entries.append((name, _STATUS_CODE[status], reason, base in MIXED_DEVICE_OK, moves_bits))
    _C._set_op_policy(entries)


def _returns_view(full_name: str) -> bool:
    import torch

    ns, name, overload = split(full_name)
    try:
        packet = getattr(getattr(torch.ops, ns), name)
        schema = getattr(packet, overload or "default")._schema
    except (AttributeError, RuntimeError):
        return False
    return any(r.alias_info is not None and not r.alias_info.is_write for r in schema.returns)


# CompositeExplicitAutograd kernels without a CPU kernel that call a CPU DispatchStub directly
# (on a neuron tensor: "DispatchStub: missing kernel for neuron"): run whole on the core too.
# conj_physical_ on complex tensors (also reached by svd/linalg.svd with out=).
_COMPOSITE_WITH_CPU_STUBS = ["conj_physical_"]


def route_structured_ops_whole() -> int:
    """Send structured ops that have a CPU kernel to the core in one piece (see csrc/eager/kernel.cpp:
    run_whole_on_core). Returns how many overloads were routed."""
    import torch

    from torch_neuronx import _C

    has = torch._C._dispatch_has_kernel_for_dispatch_key
    names = []
    for full in torch._C._dispatch_get_all_op_names():
        if not full.startswith("aten::"):
            continue
        if _returns_view(full):
            continue  # views are metadata-only on the device; the generic path is cheaper
        if (
            has(full, "CPU")
            and not has(full, "PrivateUse1")
            and (
                has(full, "CompositeExplicitAutogradNonFunctional")
                or has(full, "CompositeExplicitAutograd")
            )
        ):
            names.append(full[len("aten::") :])
    names += _COMPOSITE_WITH_CPU_STUBS
    _C._run_whole_on_core(names)
    return len(names)
