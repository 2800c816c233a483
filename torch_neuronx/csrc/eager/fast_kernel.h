// The machinery of the eager fast path (issue 11), shared by its kernel files
// (fast_ops.cpp: pointwise, matmul and reduction ops; fast_foreach.cpp: the optimizers' foreach
// ops; fast_norm_loss.cpp: layer norm and NLL loss; fast_copy.cpp: device-to-device copies).
// fast_ops.cpp's opening comment says what a fast kernel is and when a call may take it.
//
// Include this header first: it sets the macros DispatchStub's declaration depends on.
#pragma once

// DispatchStub's inline dispatch names one static kernel pointer per CPU capability PyTorch was
// built with; its declaration depends on these macros, which PyTorch's own build defines. The
// x86_64 wheels are built with AVX2 and AVX512 kernels (libtorch_cpu exports
// DispatchStubImpl::get_call_ptr(DeviceType, void*, void*, void*)), so the same declaration
// must be seen here, before any ATen header.
#if defined(__x86_64__) || defined(_M_X64)
#define HAVE_AVX512_CPU_DEFINITION
#define HAVE_AVX2_CPU_DEFINITION
#else
#error "fast_kernel.h: set the HAVE_*_CPU_DEFINITION macros PyTorch was built with on this ISA"
#endif

#include "eager/fast_ops.h"

#include "eager/kernel.h"
#include "eager/op_table.h"
#include "eager/plan_key.h"
#include "runtime/op_source.h"
#include "runtime/perf_hook.h"
#include "runtime/runtime.h"

#include <ATen/TensorIterator.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <array>
#include <optional>
#include <type_traits>

namespace torch_neuronx {
namespace fast {

bool fast_path_on();  // the switch: eager_fast_path()

// ---- DispatchStub slots: CPU's loops for neuron TensorIterators ----
// A structured impl calls `stub(device_type(), iter, ...)`; for neuron tensors the device type
// is PrivateUse1, whose slot forwards to the CPU kernel PyTorch registered for the host's ISA.
template <auto& Stub, typename... Args>
void cpu_loop(Args... args) {
  Stub(c10::DeviceType::CPU, args...);
}

// Points `Stub`'s PrivateUse1 slot at cpu_loop (each fast_*.cpp does so at load, for the stubs
// of the CPU classes it runs).
template <auto& Stub, typename... Args>
void route_to_cpu() {
  Stub.set_privateuse1_dispatch_ptr(&cpu_loop<Stub, Args...>);
}

// A dense output on `device`: with `strides`, exactly those; without, laid out in
// `memory_format` (contiguous when none), as CPU's structured kernels allocate theirs.
at::Tensor empty_on_device(int device, c10::IntArrayRef sizes, c10::IntArrayRef strides,
                           c10::ScalarType dtype,
                           std::optional<c10::MemoryFormat> memory_format = std::nullopt);

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
    out_[i] = empty_on_device(device_, sizes, strides, options.dtype().toScalarType(),
                              options.memory_format_opt());
    if constexpr (std::is_base_of_v<at::TensorIteratorBase, Impl>)
      Impl::set_output_raw_strided(i, sizes, strides, options);
  }
  int device_;
  std::array<at::Tensor, 2> out_;  // nll_loss_forward has two outputs
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

Op lookup(const char* name, const char* overload);

// The neuron device every tensor is on, when all are neuron tensors of one device and one
// floating dtype of 32 bits or fewer; -1 otherwise (the generic path runs the call). Integer
// inputs are left to the generic path: several of these ops promote them (div, rsqrt, sum's
// int64 accumulation), which TensorIterator does with temporaries on CPU devices only.
// What does not depend on the arguments: the fast path is on, nobody measures (performance
// model, profiler), no op source is tracked, and the op is native by the policy table.
inline bool fast_call_allowed(const Op& op) {
  return fast_path_on() && !perf_enabled() && !op_source_tracking() &&
         op.entry->facts.status == OpStatus::Native;
}
inline bool fast_dtype(c10::ScalarType t) {
  return t == at::kFloat || t == at::kBFloat16 || t == at::kHalf;
}

template <typename... T>
int eligible_device(const Op& op, const at::Tensor& first, const T&... rest) {
  if (!fast_call_allowed(op)) return -1;
  if (!first.defined() || first.device().type() != kNeuron) return -1;
  const auto dtype = first.scalar_type();
  if (!fast_dtype(dtype)) return -1;
  const auto device = first.device();
  const bool same =
      ((rest.defined() && rest.device() == device && rest.scalar_type() == dtype) && ...);
  return same ? device.index() : -1;
}

// While a fast kernel runs on device `d`: the ops it dispatches itself (fill_, copy_, a
// contiguous copy) are its implementation, not the caller's ops (untracked, as the generic
// path hides them on host aliases), and what they allocate lands on `d`.
struct KernelScope {
  explicit KernelScope(int d) {
    if (C10_UNLIKELY(d != current_device())) on.emplace(c10::Device(kNeuron, c10::DeviceIndex(d)));
  }
  PauseTracking inner;
  std::optional<c10::DeviceGuard> on;
};

// A Python number operand (`x * 0.5`, `var + eps`) arrives as a CPU "wrapped number" tensor of
// dtype double/int64/bool. With a float32 `self`, the result is float32, and CPU's
// TensorIterator casts the number to float32 before its loop; for neuron tensors it would
// not, so the number is cast here, once, into a host float32 scalar tensor (a CPU scalar
// operand is read in place by the loop, as CUDA reads one).
at::Tensor number_operand(const at::Tensor& self, const at::Tensor& other);
// The same for a Scalar argument (`t.mul_(0.9)` reaches CPU as mul_.Scalar).
at::Tensor scalar_operand(const at::Tensor& self, const c10::Scalar& s);
at::Tensor float32_number(double v);

// Counts a call the fast path ran (_C._eager_fast_path_calls(); account() counts its own).
void note_fast_call();

// What the generic path records per call: the op ran, and one plan-cache lookup keyed by the
// argument signature (the generic path's key, computed from the typed arguments: a miss boxes
// them and decides the plan exactly as the generic path does).
void mark_executed(OpEntry& e);
template <typename... Args>
void account(const Op& op, const Args&... args) {
  note_fast_call();
  mark_executed(*op.entry);
  uint64_t key = plan_key::start(op.handle);
  ((key = plan_key::arg(key, args)), ...);
  if (C10_LIKELY(cached_plan(key) != nullptr)) return;
  const std::array<c10::IValue, sizeof...(Args)> boxed{c10::IValue(args)...};
  build_plan(*op.entry, op.handle, key, boxed.data(), boxed.size());
}

// The generic path for one call of `op`: its results, one stack entry each.
template <typename... Args>
torch::jit::Stack generic_results(const Op& op, Args&&... args) {
  torch::jit::Stack stack;
  stack.reserve(sizeof...(Args));
  (stack.emplace_back(std::forward<Args>(args)), ...);
  run_on_core_boxed(op.handle, &stack);
  return stack;
}
// ... for an op with at most one result.
template <typename... Args>
c10::IValue generic(const Op& op, Args&&... args) {
  torch::jit::Stack stack = generic_results(op, std::forward<Args>(args)...);
  return stack.empty() ? c10::IValue() : std::move(stack.back());
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
  account(op, self, other, extra...);
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
  account(op, self, other, extra...);
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
  account(op, args...);
  OnDevice<Impl> k(d);
  KernelScope scope(d);
  k.meta(args...);
  k.impl(args..., k.maybe_get_output(0));
  return k.take();
}

}  // namespace fast
}  // namespace torch_neuronx
