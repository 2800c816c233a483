// The non-template parts of the eager fast path's machinery (fast_kernel.h).
#include "eager/fast_kernel.h"

#include "runtime/allocator.h"

#include <ATen/EmptyTensor.h>

#include <atomic>

namespace torch_neuronx {

namespace {
std::atomic<bool> g_fast_path{true};
std::atomic<int64_t> g_fast_calls{0};
}  // namespace

void set_eager_fast_path(bool on) { g_fast_path.store(on, std::memory_order_relaxed); }
bool eager_fast_path() { return g_fast_path.load(std::memory_order_relaxed); }
int64_t eager_fast_path_calls() { return g_fast_calls.load(std::memory_order_relaxed); }

namespace fast {

bool fast_path_on() { return g_fast_path.load(std::memory_order_relaxed); }

// ---- outputs in device memory ----
at::Tensor empty_on_device(int device, c10::IntArrayRef sizes, c10::IntArrayRef strides,
                           c10::ScalarType dtype, std::optional<c10::MemoryFormat> memory_format) {
  const c10::DispatchKeySet ks(c10::DispatchKey::PrivateUse1);
  if (strides.empty()) {
    // No strides: dense in the memory format the options carry, as CPU's create_out
    // (empty_cpu(sizes, options)) does. TensorIterator's fast setup asks for a channels_last
    // output this way when every input is channels_last, and then writes it in that order:
    // ignoring the format here would lay the same bytes out as contiguous (issue 26).
    c10::DeviceGuard g(c10::Device(kNeuron, c10::DeviceIndex(device)));
    return at::detail::empty_generic(sizes, neuron_allocator(), ks, dtype, memory_format);
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

Op lookup(const char* name, const char* overload) {
  auto h = c10::Dispatcher::singleton().findSchemaOrThrow(name, overload);
  return {h, &op_entry(h)};
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
  return float32_number(v);
}

at::Tensor scalar_operand(const at::Tensor& self, const c10::Scalar& s) {
  // What number_operand makes of wrapped_scalar_tensor(s), the tensor CPU's Scalar overloads
  // (add_.Scalar, mul_.Scalar, div_.Scalar) build and redispatch with.
  if (self.scalar_type() != at::kFloat || self.device().type() != kNeuron) return at::Tensor();
  if (s.isFloatingPoint()) return float32_number(s.toDouble());
  if (s.isBoolean()) return float32_number(s.toBool() ? 1.0 : 0.0);
  if (s.isIntegral(/*includeBool=*/false))
    return float32_number(double(static_cast<float>(s.toLong())));
  return at::Tensor();  // complex, symbolic: generic path
}

at::Tensor float32_number(double v) {
  at::Tensor t =
      at::detail::empty_cpu({}, at::kFloat, std::nullopt, std::nullopt, std::nullopt, std::nullopt);
  *t.mutable_data_ptr<float>() = static_cast<float>(v);  // unchecked, as CPU's cast
  return t;
}

void note_fast_call() { g_fast_calls.fetch_add(1, std::memory_order_relaxed); }

void mark_executed(OpEntry& e) {
  if (!e.executed.load(std::memory_order_relaxed) && !tracking_paused())
    e.executed.store(true, std::memory_order_relaxed);
}

}  // namespace fast
}  // namespace torch_neuronx
