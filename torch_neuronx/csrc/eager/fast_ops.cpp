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
// DispatchStub's inline dispatch names one static kernel pointer per CPU capability PyTorch was
// built with; its declaration depends on these macros, which PyTorch's own build defines. The
// x86_64 wheels are built with AVX2 and AVX512 kernels (libtorch_cpu exports
// DispatchStubImpl::get_call_ptr(DeviceType, void*, void*, void*)), so the same declaration
// must be seen here, before any ATen header.
#if defined(__x86_64__) || defined(_M_X64)
#define HAVE_AVX512_CPU_DEFINITION
#define HAVE_AVX2_CPU_DEFINITION
#else
#error "fast_ops.cpp: set the HAVE_*_CPU_DEFINITION macros PyTorch was built with on this ISA"
#endif

#include "eager/fast_ops.h"

#include "eager/kernel.h"
#include "eager/op_table.h"
#include "runtime/allocator.h"
#include "runtime/op_source.h"
#include "runtime/perf_hook.h"
#include "runtime/runtime.h"

#include <ATen/ATen.h>
#include <ATen/EmptyTensor.h>
#include <ATen/ScalarOps.h>
#include <ATen/TensorIterator.h>
#include <ATen/core/dispatch/Dispatcher.h>
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

#include <array>
#include <atomic>
#include <optional>
#include <type_traits>

namespace torch_neuronx {

namespace {
std::atomic<bool> g_fast_path{true};
std::atomic<int64_t> g_fast_calls{0};
}  // namespace

void set_eager_fast_path(bool on) { g_fast_path.store(on, std::memory_order_relaxed); }
bool eager_fast_path() { return g_fast_path.load(std::memory_order_relaxed); }
int64_t eager_fast_path_calls() { return g_fast_calls.load(std::memory_order_relaxed); }

namespace fast {
namespace {

// ---- DispatchStub slots: CPU's loops for neuron TensorIterators ----
// A structured impl calls `stub(device_type(), iter, ...)`; for neuron tensors the device type
// is PrivateUse1, whose slot forwards to the CPU kernel PyTorch registered for the host's ISA.
template <auto& Stub, typename... Args>
void cpu_loop(Args... args) {
  Stub(c10::DeviceType::CPU, args...);
}

// (sub's impl calls add_stub with -alpha; PyTorch's sub_stub is declared but never defined.)
struct RegisterStubs {
  RegisterStubs() {
    using at::TensorIteratorBase;
    at::native::add_stub.set_privateuse1_dispatch_ptr(
        &cpu_loop<at::native::add_stub, TensorIteratorBase&, const c10::Scalar&>);
    at::native::mul_stub.set_privateuse1_dispatch_ptr(
        &cpu_loop<at::native::mul_stub, TensorIteratorBase&>);
    at::native::div_true_stub.set_privateuse1_dispatch_ptr(
        &cpu_loop<at::native::div_true_stub, TensorIteratorBase&>);
    at::native::threshold_stub.set_privateuse1_dispatch_ptr(
        &cpu_loop<at::native::threshold_stub, TensorIteratorBase&, const c10::Scalar&,
                  const c10::Scalar&>);
    at::native::sum_stub.set_privateuse1_dispatch_ptr(
        &cpu_loop<at::native::sum_stub, at::TensorIterator&>);
    at::native::neg_stub.set_privateuse1_dispatch_ptr(
        &cpu_loop<at::native::neg_stub, TensorIteratorBase&>);
    at::native::rsqrt_stub.set_privateuse1_dispatch_ptr(
        &cpu_loop<at::native::rsqrt_stub, TensorIteratorBase&>);
    at::native::silu_stub.set_privateuse1_dispatch_ptr(
        &cpu_loop<at::native::silu_stub, TensorIteratorBase&>);
    at::native::silu_backward_stub.set_privateuse1_dispatch_ptr(
        &cpu_loop<at::native::silu_backward_stub, TensorIteratorBase&>);
    at::native::clamp_min_scalar_stub.set_privateuse1_dispatch_ptr(
        &cpu_loop<at::native::clamp_min_scalar_stub, TensorIteratorBase&, c10::Scalar>);
    at::native::fill_stub.set_privateuse1_dispatch_ptr(
        &cpu_loop<at::native::fill_stub, at::TensorIterator&, const c10::Scalar&>);
    at::native::pow_tensor_scalar_stub.set_privateuse1_dispatch_ptr(
        &cpu_loop<at::native::pow_tensor_scalar_stub, TensorIteratorBase&, const c10::Scalar&>);
  }
};
RegisterStubs g_register_stubs;

// ---- outputs in device memory ----
at::Tensor empty_on_device(int device, c10::IntArrayRef sizes, c10::IntArrayRef strides,
                           c10::ScalarType dtype) {
  const c10::DispatchKeySet ks(c10::DispatchKey::PrivateUse1);
  if (strides.empty()) {
    // Contiguous, as CPU's create_out does for an empty stride list.
    c10::DeviceGuard g(c10::Device(kNeuron, c10::DeviceIndex(device)));
    return at::detail::empty_generic(sizes, neuron_allocator(), ks, dtype, std::nullopt);
  }
  const size_t item = c10::elementSize(dtype);
  const size_t nbytes = at::detail::computeStorageNbytes(sizes, strides, item);
  auto storage = c10::make_intrusive<c10::StorageImpl>(
      c10::StorageImpl::use_byte_size_t(), nbytes,
      allocate_on(device, nbytes, c10::Device(kNeuron, c10::DeviceIndex(device))),
      neuron_allocator(), /*resizable=*/true);
  auto t = at::detail::make_tensor<c10::TensorImpl>(c10::Storage(std::move(storage)), ks,
                                                    c10::scalarTypeToTypeMeta(dtype));
  t.unsafeGetTensorImpl()->set_sizes_and_strides(sizes, strides);
  return t;
}

// CPU's structured class `Impl`, with its outputs allocated on neuron device `device` (the
// functional variant: what RegisterCPU.cpp generates, with the device allocator).
template <class Impl>
struct OnDevice final : Impl {
  explicit OnDevice(int device) : device_(device) {}
  void set_output_strided(int64_t i, c10::IntArrayRef sizes, c10::IntArrayRef strides,
                          c10::TensorOptions options) override {
    set(i, sizes, strides, options);
  }
  void set_output_raw_strided(int64_t i, c10::IntArrayRef sizes, c10::IntArrayRef strides,
                              c10::TensorOptions options) override {
    set(i, sizes, strides, options);
  }
  const at::Tensor& maybe_get_output(int64_t i) override { return out_[i]; }

  at::Tensor take(int64_t i = 0) { return std::move(out_[i]); }

 private:
  void set(int64_t i, c10::IntArrayRef sizes, c10::IntArrayRef strides,
           c10::TensorOptions options) {
    out_[i] = empty_on_device(device_, sizes, strides, options.dtype().toScalarType());
    if constexpr (std::is_base_of_v<at::TensorIteratorBase, Impl>)
      Impl::set_output_raw_strided(i, sizes, strides, options);
  }
  int device_;
  std::array<at::Tensor, 1> out_;
};

// The in-place variant of a TensorIterator op (TensorIterator itself checks the result's
// shape and dtype against `self`, with CPU's messages).
template <class Impl>
struct InPlace final : Impl {
  explicit InPlace(const at::Tensor& self) : self_(self) {}
  void set_output_strided(int64_t i, c10::IntArrayRef sizes, c10::IntArrayRef strides,
                          c10::TensorOptions options) override {
    Impl::set_output_raw_strided(i, sizes, strides, options);
  }
  void set_output_raw_strided(int64_t i, c10::IntArrayRef sizes, c10::IntArrayRef strides,
                              c10::TensorOptions options) override {
    Impl::set_output_raw_strided(i, sizes, strides, options);
  }
  const at::Tensor& maybe_get_output(int64_t) override { return self_; }

 private:
  const at::Tensor& self_;
};

// ---- eligibility, tracking, plan cache ----
struct Op {
  c10::OperatorHandle handle;
  OpEntry* entry;
};

Op lookup(const char* name, const char* overload) {
  auto h = c10::Dispatcher::singleton().findSchemaOrThrow(name, overload);
  return {h, &op_entry(h)};
}

// The neuron device every tensor is on, when all are neuron tensors of one device and one
// floating dtype of 32 bits or fewer; -1 otherwise (the generic path runs the call). Integer
// inputs are left to the generic path: several of these ops promote them (div, rsqrt, sum's
// int64 accumulation), which TensorIterator does with temporaries on CPU devices only.
template <typename... T>
int eligible_device(const Op& op, const at::Tensor& first, const T&... rest) {
  if (!g_fast_path.load(std::memory_order_relaxed) || perf_enabled() || op_source_tracking())
    return -1;
  if (op.entry->facts.status != OpStatus::Native) return -1;
  if (!first.defined() || first.device().type() != kNeuron) return -1;
  const auto dtype = first.scalar_type();
  if (dtype != at::kFloat && dtype != at::kBFloat16 && dtype != at::kHalf) return -1;
  const auto device = first.device();
  const bool same =
      ((rest.defined() && rest.device() == device && rest.scalar_type() == dtype) && ...);
  return same ? device.index() : -1;
}

// A Python number operand (`x * 0.5`, `var + eps`) arrives as a CPU "wrapped number" tensor of
// dtype double/int64/bool. With a float32 `self`, the result is float32, and CPU's
// TensorIterator casts the number to float32 before its loop; for neuron tensors it would
// not, so the number is cast here, once, into a host float32 scalar tensor (a CPU scalar
// operand is read in place by the loop, as CUDA reads one).
at::Tensor number_operand(const at::Tensor& self, const at::Tensor& other) {
  if (!other.defined() || !other.unsafeGetTensorImpl()->is_wrapped_number() ||
      !other.device().is_cpu() || self.device().type() != kNeuron)
    return at::Tensor();
  double v;
  switch (other.scalar_type()) {
    case at::kDouble:
      v = *other.const_data_ptr<double>();
      break;
    case at::kLong:  // int64 -> float goes through float, as CPU's cast kernel does
      v = double(static_cast<float>(*other.const_data_ptr<int64_t>()));
      break;
    case at::kBool:
      v = *other.const_data_ptr<bool>() ? 1.0 : 0.0;
      break;
    default:
      return at::Tensor();  // complex numbers promote a real tensor: generic path
  }
  // float32 only: for bfloat16/float16 tensors CPU's loops compute with the number's original
  // value in float (TensorIterator's original_scalar_value), which a cast here would round.
  if (self.scalar_type() != at::kFloat) return at::Tensor();
  at::Tensor t =
      at::detail::empty_cpu({}, at::kFloat, std::nullopt, std::nullopt, std::nullopt, std::nullopt);
  *t.mutable_data_ptr<float>() = static_cast<float>(v);  // unchecked, as CPU's cast
  return t;
}

// What the generic path records per call: the op ran, and one plan-cache lookup keyed by the
// argument signature (a miss decides the plan exactly as the generic path does).
void account(const Op& op, std::initializer_list<c10::IValue> args) {
  g_fast_calls.fetch_add(1, std::memory_order_relaxed);
  OpEntry& e = *op.entry;
  if (!e.executed.load(std::memory_order_relaxed) && !tracking_paused())
    e.executed.store(true, std::memory_order_relaxed);
  plan_for_args(e, op.handle, args.begin(), args.size());
}

// The generic path for one call of `op`.
template <typename... Args>
c10::IValue generic(const Op& op, Args&&... args) {
  torch::jit::Stack stack;
  stack.reserve(sizeof...(Args));
  (stack.emplace_back(std::forward<Args>(args)), ...);
  run_on_core_boxed(op.handle, &stack);
  return std::move(stack.back());
}

// ---- the kernels ----
#define NEURON_FAST_OP(var, name, overload) static const Op& var = *new Op(lookup(name, overload))

// Binary TensorIterator ops, functional and in-place; `extra` are trailing non-tensor
// arguments (alpha).
template <class Impl, typename... Extra>
at::Tensor binary(const Op& op, const at::Tensor& self, const at::Tensor& other,
                  const Extra&... extra) {
  at::Tensor number = number_operand(self, other);
  const at::Tensor& rhs = number.defined() ? number : other;
  const int d = number.defined() ? eligible_device(op, self) : eligible_device(op, self, other);
  if (d < 0) return generic(op, self, other, extra...).toTensor();
  account(op, {self, other, extra...});
  OnDevice<Impl> k(d);
  k.meta(self, rhs, extra...);
  k.impl(self, rhs, extra..., k.maybe_get_output(0));
  return k.take();
}

template <class Impl, typename... Extra>
at::Tensor& binary_(const Op& op, at::Tensor& self, const at::Tensor& other,
                    const Extra&... extra) {
  at::Tensor number = number_operand(self, other);
  const at::Tensor& rhs = number.defined() ? number : other;
  const int d = number.defined() ? eligible_device(op, self) : eligible_device(op, self, other);
  if (d < 0) {
    generic(op, self, other, extra...);
    return self;
  }
  account(op, {self, other, extra...});
  InPlace<Impl> k(self);
  k.meta(self, rhs, extra...);
  k.impl(self, rhs, extra..., self);
  return self;
}

// Ops of one or more tensors (all of one dtype) and trailing non-tensor arguments, run by
// CPU's structured class `Impl`. `Tensors` is the number of leading tensor arguments.
template <class Impl, size_t Tensors, typename... Args>
at::Tensor structured(const Op& op, const Args&... args) {
  const auto tensors = std::forward_as_tuple(args...);
  int d;
  if constexpr (Tensors == 1)
    d = eligible_device(op, std::get<0>(tensors));
  else if constexpr (Tensors == 2)
    d = eligible_device(op, std::get<0>(tensors), std::get<1>(tensors));
  else
    d = eligible_device(op, std::get<0>(tensors), std::get<1>(tensors), std::get<2>(tensors));
  if (d < 0) return generic(op, args...).toTensor();
  account(op, {c10::IValue(args)...});
  OnDevice<Impl> k(d);
  PauseTracking inner;  // ops the kernel dispatches itself (fill_, copy_) are its implementation
  // ... and allocate what they need (a contiguous copy) on the inputs' device
  std::optional<c10::DeviceGuard> on;
  if (C10_UNLIKELY(d != current_device())) on.emplace(c10::Device(kNeuron, c10::DeviceIndex(d)));
  k.meta(args...);
  k.impl(args..., k.maybe_get_output(0));
  return k.take();
}

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
// reduced-precision float32 under torch.set_float32_matmul_precision), which a neuron tensor
// would not get: only full-precision float32 matmuls take the fast path.
bool plain_float32_matmul(const at::Tensor& t) {
  return t.scalar_type() == at::kFloat &&
         at::globalContext().float32MatmulPrecision() == at::Float32MatmulPrecision::HIGHEST;
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
  account(op, {self});
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
  account(op, {self, value});
  return at::native::fill_(self, value);  // a TensorIterator over `self`: fill_stub's loop
}

at::Tensor sum_dim(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                   std::optional<at::ScalarType> dtype) {
  NEURON_FAST_OP(op, "aten::sum", "dim_IntList");
  // An explicit dtype asks for another accumulation type: the generic path decides it.
  const int d = dtype.has_value() ? -1 : eligible_device(op, self);
  auto dim_iv = dim.has_value() ? c10::IValue(dim->vec()) : c10::IValue();
  if (d < 0) return generic(op, self, dim_iv, keepdim, dtype).toTensor();
  account(op, {self, dim_iv, keepdim, c10::IValue()});
  OnDevice<structured_sum_out> k(d);
  PauseTracking inner;  // the reduction fills its output through the dispatcher
  std::optional<c10::DeviceGuard> on;
  if (C10_UNLIKELY(d != current_device())) on.emplace(c10::Device(kNeuron, c10::DeviceIndex(d)));
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
}

}  // namespace
}  // namespace fast
}  // namespace torch_neuronx
