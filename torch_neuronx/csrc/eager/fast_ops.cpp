// Unboxed kernels for the hottest structured ops (the eager fast path, issue 11).
//
// The generic path (kernel.cpp) reaches every op boxed, rewrites neuron arguments as CPU
// aliases of the device memory, runs CPU's kernel, and turns fresh CPU outputs back into neuron
// tensors: about 6k instructions per op on top of the CPU kernel (benchmarks/callgrind_eager.py).
// For the ops below the driver instead runs CPU's own structured kernel class directly on the
// neuron tensors: its meta function (shape, dtype and stride rules: CPU's, unchanged), an output
// allocated in device memory (set_output below), and its impl, whose DispatchStub calls reach
// CPU's vectorised loops through the PrivateUse1 slot of the stub (device memory is host
// memory). Nothing is aliased or adopted, and nothing is boxed.
//
// Ops whose CPU kernel branches on the device (gelu uses oneDNN for CPU tensors only) would
// give other bits here, so they are not on the list: tests/eager/test_fast_path.py requires
// bit-identical results for every op it covers, in float32, bfloat16 and float16.
//
// A call takes the fast path only when that is observably the same as the generic path:
// the fast path is on (TORCH_NEURONX_EAGER_FAST_PATH), nobody measures (performance model,
// profiler) and no op source is tracked, the op is native by the policy table, every tensor
// argument is a neuron tensor of one device and one dtype, and that dtype is not a 64-bit float
// (the float64 policy lives in the generic path). TensorIterator casts mixed dtypes only for
// CPU devices, which is one more reason for the one-dtype rule. Everything else is handed to
// the generic path unchanged (run_on_core_boxed). Tracking (executed ops) and the kernel plan
// cache's counters are kept the same way on both paths; tests/eager/test_fast_path.py compares
// the two paths op by op (results, strides, tracking, counters).
#include "eager/fast_kernel.h"

#include <ATen/Context.h>
#include <ATen/native/Activation.h>
#include <ATen/native/BinaryOps.h>
#include <ATen/native/Fill.h>
#include <ATen/native/Pow.h>
#include <ATen/native/ReduceOps.h>
#include <ATen/native/TensorCompare.h>
#include <ATen/native/UnaryOps.h>
#include <ATen/ops/_log_softmax_backward_data_native.h>
#include <ATen/ops/_log_softmax_native.h>
#include <ATen/ops/add_native.h>
#include <ATen/ops/addmm_native.h>
#include <ATen/ops/clamp_min_native.h>
#include <ATen/ops/div_native.h>
#include <ATen/ops/fill_native.h>
#include <ATen/ops/mm_native.h>
#include <ATen/ops/mul_native.h>
#include <ATen/ops/neg_native.h>
#include <ATen/ops/pow_native.h>
#include <ATen/ops/rsqrt_native.h>
#include <ATen/ops/silu_backward_native.h>
#include <ATen/ops/silu_native.h>
#include <ATen/ops/sub_native.h>
#include <ATen/ops/sum_native.h>
#include <ATen/ops/threshold_backward_native.h>
#include <torch/library.h>

namespace torch_neuronx {
namespace fast {
namespace {

// (sub's impl calls add_stub with -alpha; PyTorch's sub_stub is declared but never defined.)
struct RegisterStubs {
  RegisterStubs() {
    using at::TensorIteratorBase;
    route_to_cpu<at::native::add_stub, TensorIteratorBase&, const c10::Scalar&>();
    route_to_cpu<at::native::mul_stub, TensorIteratorBase&>();
    route_to_cpu<at::native::div_true_stub, TensorIteratorBase&>();
    route_to_cpu<at::native::threshold_stub, TensorIteratorBase&, const c10::Scalar&,
                 const c10::Scalar&>();
    route_to_cpu<at::native::sum_stub, at::TensorIterator&>();
    route_to_cpu<at::native::neg_stub, TensorIteratorBase&>();
    route_to_cpu<at::native::rsqrt_stub, TensorIteratorBase&>();
    route_to_cpu<at::native::silu_stub, TensorIteratorBase&>();
    route_to_cpu<at::native::silu_backward_stub, TensorIteratorBase&>();
    route_to_cpu<at::native::clamp_min_scalar_stub, TensorIteratorBase&, c10::Scalar>();
    route_to_cpu<at::native::fill_stub, at::TensorIterator&, const c10::Scalar&>();
    route_to_cpu<at::native::pow_tensor_scalar_stub, TensorIteratorBase&, const c10::Scalar&>();
  }
};
RegisterStubs g_register_stubs;

using namespace at::native;  // CPU's structured kernel classes

at::Tensor add(const at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha) {
  NEURON_FAST_OP(op, "aten::add", "Tensor");
  return binary<structured_ufunc_add_CPU>(op, self, other, alpha);
}
at::Tensor& add_(at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha) {
  NEURON_FAST_OP(op, "aten::add_", "Tensor");
  return binary_<structured_ufunc_add_CPU>(op, self, other, alpha);
}
at::Tensor sub(const at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha) {
  NEURON_FAST_OP(op, "aten::sub", "Tensor");
  return binary<structured_sub_out>(op, self, other, alpha);
}
at::Tensor& sub_(at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha) {
  NEURON_FAST_OP(op, "aten::sub_", "Tensor");
  return binary_<structured_sub_out>(op, self, other, alpha);
}
at::Tensor mul(const at::Tensor& self, const at::Tensor& other) {
  NEURON_FAST_OP(op, "aten::mul", "Tensor");
  return binary<structured_mul_out>(op, self, other);
}
at::Tensor& mul_(at::Tensor& self, const at::Tensor& other) {
  NEURON_FAST_OP(op, "aten::mul_", "Tensor");
  return binary_<structured_mul_out>(op, self, other);
}
at::Tensor div(const at::Tensor& self, const at::Tensor& other) {
  NEURON_FAST_OP(op, "aten::div", "Tensor");
  return binary<structured_div_out>(op, self, other);
}
at::Tensor& div_(at::Tensor& self, const at::Tensor& other) {
  NEURON_FAST_OP(op, "aten::div_", "Tensor");
  return binary_<structured_div_out>(op, self, other);
}

at::Tensor threshold_backward(const at::Tensor& grad, const at::Tensor& self,
                              const c10::Scalar& threshold) {
  NEURON_FAST_OP(op, "aten::threshold_backward", "");
  return structured<structured_threshold_backward_out, 2>(op, grad, self, threshold);
}
// CPU's matmul may pick oneDNN for CPU tensors (bf16/fp16 on CPUs with those instructions,
// reduced-precision float32), which a neuron tensor would not get: only full-precision float32
// matmuls take the fast path. The precision asked is the one CPU's float32 matmul itself reads,
// oneDNN's matmul entry (torch.backends.mkldnn.matmul.fp32_precision, or the generic setting,
// or set_float32_matmul_precision, which writes it): float32MatmulPrecision() would throw
// where the legacy and the per-backend APIs were mixed (mkldnn.matmul.fp32_precision = "bf16"
// alone), on both paths, while CPU's matmul runs.
bool plain_float32_matmul(const at::Tensor& t) {
  if (t.scalar_type() != at::kFloat) return false;
  const auto p =
      at::globalContext().float32Precision(at::Float32Backend::MKLDNN, at::Float32Op::MATMUL);
  return p == at::Float32Precision::IEEE || p == at::Float32Precision::NONE;
}
at::Tensor mm(const at::Tensor& self, const at::Tensor& mat2) {
  NEURON_FAST_OP(op, "aten::mm", "");
  if (!plain_float32_matmul(self)) return generic(op, self, mat2).toTensor();
  return structured<structured_mm_out_cpu, 2>(op, self, mat2);
}
at::Tensor addmm(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                 const c10::Scalar& beta, const c10::Scalar& alpha) {
  NEURON_FAST_OP(op, "aten::addmm", "");
  if (!plain_float32_matmul(mat1)) return generic(op, self, mat1, mat2, beta, alpha).toTensor();
  return structured<structured_addmm_out_cpu, 3>(op, self, mat1, mat2, beta, alpha);
}
at::Tensor neg(const at::Tensor& self) {
  NEURON_FAST_OP(op, "aten::neg", "");
  return structured<structured_neg_out, 1>(op, self);
}
at::Tensor rsqrt(const at::Tensor& self) {
  NEURON_FAST_OP(op, "aten::rsqrt", "");
  return structured<structured_rsqrt_out, 1>(op, self);
}
at::Tensor silu(const at::Tensor& self) {
  NEURON_FAST_OP(op, "aten::silu", "");
  return structured<structured_silu_out, 1>(op, self);
}
at::Tensor silu_backward(const at::Tensor& grad, const at::Tensor& self) {
  NEURON_FAST_OP(op, "aten::silu_backward", "");
  return structured<structured_silu_backward_out, 2>(op, grad, self);
}
at::Tensor pow_scalar(const at::Tensor& self, const c10::Scalar& exponent) {
  NEURON_FAST_OP(op, "aten::pow", "Tensor_Scalar");
  // A complex exponent makes a real base complex: the generic path decides that.
  if (exponent.isComplex()) return generic(op, self, exponent).toTensor();
  return structured<structured_pow_Tensor_Scalar_out, 1>(op, self, exponent);
}

at::Tensor relu(const at::Tensor& self) {
  // CPU's relu is clamp_min(self, 0): the same class, under relu's name and plan key.
  NEURON_FAST_OP(op, "aten::relu", "");
  const int d = eligible_device(op, self);
  if (d < 0) return generic(op, self).toTensor();
  account(op, self);
  const c10::Scalar zero(0);
  OnDevice<structured_clamp_min_out> k(d);
  k.meta(self, zero);
  k.impl(self, zero, k.maybe_get_output(0));
  return k.take();
}
at::Tensor log_softmax(const at::Tensor& self, int64_t dim, bool half_to_float) {
  NEURON_FAST_OP(op, "aten::_log_softmax", "");
  return structured<structured_log_softmax_cpu_out, 1>(op, self, dim, half_to_float);
}
at::Tensor log_softmax_backward(const at::Tensor& grad, const at::Tensor& output, int64_t dim,
                                at::ScalarType input_dtype) {
  NEURON_FAST_OP(op, "aten::_log_softmax_backward_data", "");
  return structured<structured_log_softmax_backward_cpu_out, 2>(op, grad, output, dim, input_dtype);
}
at::Tensor& fill_(at::Tensor& self, const c10::Scalar& value) {
  NEURON_FAST_OP(op, "aten::fill_", "Scalar");
  if (eligible_device(op, self) < 0) {
    generic(op, self, value);
    return self;
  }
  account(op, self, value);
  return at::native::fill_(self, value);  // a TensorIterator over `self`: fill_stub's loop
}

at::Tensor& zero_(at::Tensor& self) {
  NEURON_FAST_OP(op, "aten::zero_", "");
  if (eligible_device(op, self) < 0) {
    generic(op, self);
    return self;
  }
  account(op, self);
  // CPU's zero_ is fill_(0) (its memset shortcut is for CPU tensors only): fill_stub's loop.
  return at::native::fill_(self, 0);
}

// CPU's sum_out accumulates a bfloat16/float16 sum in a float32 buffer where its reduction
// loop would otherwise add across two reduced dims in the reduced type (the iterator's first
// two output strides 0: `should_use_acc_buffer`,
// https://github.com/pytorch/pytorch/blob/v2.13.0/aten/src/ATen/native/ReduceOps.cpp, and
// https://github.com/pytorch/pytorch/issues/83149) -- but only where the tensor's device is
// CPU, so CPU's kernel run on neuron tensors skipped the buffer (a bf16 sum over a sliced
// input was 0.5 off CPU). Such sums take the generic path, which runs CPU's kernel on CPU
// views. The test here is a cheap superset of CPU's -- a reduced type and two or more reduced
// dims longer than 1 (the buffer needs two reduced iterator dims) -- as building the
// iterator on meta tensors to ask exactly cost ~40 us a call, ten times the sum; the generic
// path costs ~1.5x CPU's sum.
bool cpu_may_buffer_reduced_sum(const at::Tensor& self, at::OptionalIntArrayRef dim) {
  const int64_t ndim = self.dim();
  if (ndim < 2 || !at::isReducedFloatingType(self.scalar_type())) return false;
  int reduced = 0;
  if (!dim.has_value() || dim->empty()) {
    for (int64_t d = 0; d < ndim; ++d) reduced += self.size(d) > 1;
  } else {
    std::vector<bool> seen(ndim, false);
    for (int64_t d : *dim) {
      const int64_t w = c10::maybe_wrap_dim(d, ndim);
      if (!seen[w] && self.size(w) > 1) ++reduced;
      seen[w] = true;
    }
  }
  return reduced >= 2;
}

at::Tensor sum_dim(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                   std::optional<at::ScalarType> dtype) {
  NEURON_FAST_OP(op, "aten::sum", "dim_IntList");
  // An explicit dtype asks for another accumulation type: the generic path decides it.
  int d = dtype.has_value() ? -1 : eligible_device(op, self);
  if (d >= 0 && cpu_may_buffer_reduced_sum(self, dim)) d = -1;
  if (d < 0) {
    auto dim_iv = dim.has_value() ? c10::IValue(dim->vec()) : c10::IValue();
    return generic(op, self, dim_iv, keepdim, dtype).toTensor();
  }
  account(op, self, dim, keepdim, dtype);
  OnDevice<structured_sum_out> k(d);
  KernelScope scope(d);  // the reduction fills its output through the dispatcher
  k.meta(self, dim, keepdim, dtype);
  k.impl(self, dim, keepdim, dtype, k.maybe_get_output(0));
  return k.take();
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("add.Tensor", TORCH_FN(add));
  m.impl("add_.Tensor", TORCH_FN(add_));
  m.impl("sub.Tensor", TORCH_FN(sub));
  m.impl("sub_.Tensor", TORCH_FN(sub_));
  m.impl("mul.Tensor", TORCH_FN(mul));
  m.impl("mul_.Tensor", TORCH_FN(mul_));
  m.impl("div.Tensor", TORCH_FN(div));
  m.impl("div_.Tensor", TORCH_FN(div_));
  m.impl("threshold_backward", TORCH_FN(threshold_backward));
  m.impl("mm", TORCH_FN(mm));
  m.impl("addmm", TORCH_FN(addmm));
  m.impl("neg", TORCH_FN(neg));
  m.impl("rsqrt", TORCH_FN(rsqrt));
  m.impl("silu", TORCH_FN(silu));
  m.impl("silu_backward", TORCH_FN(silu_backward));
  m.impl("pow.Tensor_Scalar", TORCH_FN(pow_scalar));
  m.impl("sum.dim_IntList", TORCH_FN(sum_dim));
  m.impl("relu", TORCH_FN(relu));
  m.impl("_log_softmax", TORCH_FN(log_softmax));
  m.impl("_log_softmax_backward_data", TORCH_FN(log_softmax_backward));
  m.impl("fill_.Scalar", TORCH_FN(fill_));
  m.impl("zero_", TORCH_FN(zero_));
}

}  // namespace
}  // namespace fast
}  // namespace torch_neuronx
