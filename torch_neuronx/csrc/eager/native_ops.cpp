// Kernels the emulated core implements directly (not through the generic path in
// kernel.cpp): allocation, metadata-only views, resizing, storage rebinding, and copies
// between host and device, which are the device's DMA transfers.
#include "eager/fast_ops.h"
#include "runtime/allocator.h"
#include "runtime/host_alias.h"
#include "runtime/perf_hook.h"
#include "runtime/runtime.h"
#include "runtime/sync.h"

#include <ATen/EmptyTensor.h>
#include <ATen/ops/_local_scalar_dense_native.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/copy_native.h>
#include <ATen/ops/resize_native.h>
#include <ATen/ops/set_cpu_dispatch.h>
#include <ATen/ops/set_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

namespace torch_neuronx {
namespace {

c10::Device resolve(std::optional<c10::Device> d) {
  c10::Device dev = c10::device_or_default(d);
  int index = dev.has_index() ? dev.index() : current_device();
  check_device_index(index);
  return c10::Device(kNeuron, c10::DeviceIndex(index));
}

void check_layout(std::optional<c10::Layout> layout, std::optional<bool> pin) {
  TORCH_CHECK(c10::layout_or_default(layout) == c10::Layout::Strided,
              "neuron: only strided tensors are supported on the neuron device (torch.sparse "
              "layouts are not); create the tensor on CPU instead.");
  TORCH_CHECK(!c10::pinned_memory_or_default(pin), "Only CPU tensors can be pinned.");
}

// Quantized dtypes have no neuron representation (a plain tensor of quint8 would silently lose
// its scale and zero point): refused, as docs/eager.md states.
void check_dtype(std::optional<c10::ScalarType> dtype) {
  TORCH_CHECK_NOT_IMPLEMENTED(!c10::isQIntType(c10::dtype_or_default(dtype)),
                              "quantized tensors are not supported on neuron (dtype ",
                              c10::dtype_or_default(dtype),
                              "); quantize and run quantized ops on CPU tensors.");
}

at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                               std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                               std::optional<bool> pin, std::optional<c10::MemoryFormat> fmt) {
  check_layout(layout, pin);
  check_dtype(dtype);
  c10::DeviceGuard g(resolve(device));
  return at::detail::empty_generic(size, neuron_allocator(),
                                   c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                   c10::dtype_or_default(dtype), fmt);
}

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride,
                         std::optional<c10::ScalarType> dtype, std::optional<c10::Layout> layout,
                         std::optional<c10::Device> device, std::optional<bool> pin) {
  check_layout(layout, pin);
  check_dtype(dtype);
  c10::DeviceGuard g(resolve(device));
  return at::detail::empty_strided_generic(size, stride, neuron_allocator(),
                                           c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                           c10::dtype_or_default(dtype));
}

at::Tensor view(const at::Tensor& self, c10::SymIntArrayRef size) {
  return at::native::view(self, C10_AS_INTARRAYREF_SLOW(size));
}

at::Tensor as_strided(const at::Tensor& self, c10::SymIntArrayRef size, c10::SymIntArrayRef stride,
                      std::optional<c10::SymInt> offset) {
  return at::native::as_strided_tensorimpl(
      self, C10_AS_INTARRAYREF_SLOW(size), C10_AS_INTARRAYREF_SLOW(stride),
      offset.has_value() ? std::optional<int64_t>(offset->expect_int()) : std::nullopt);
}

at::Tensor reshape_alias(const at::Tensor& self, c10::SymIntArrayRef size,
                         c10::SymIntArrayRef stride) {
  return at::native::_reshape_alias(self, C10_AS_INTARRAYREF_SLOW(size),
                                    C10_AS_INTARRAYREF_SLOW(stride));
}

const at::Tensor& resize_(const at::Tensor& self, c10::SymIntArrayRef size,
                          std::optional<c10::MemoryFormat> fmt) {
  c10::DeviceGuard g(self.device());
  return at::native::resize_(self, C10_AS_INTARRAYREF_SLOW(size), fmt);
}

at::Tensor& set_storage_offset(at::Tensor& self, c10::Storage storage, c10::SymInt offset,
                               c10::SymIntArrayRef size, c10::SymIntArrayRef stride) {
  return at::cpu::set_(self, storage, offset.expect_int(), C10_AS_INTARRAYREF_SLOW(size),
                       C10_AS_INTARRAYREF_SLOW(stride));
}
at::Tensor& set_storage(at::Tensor& self, c10::Storage source) {
  return at::native::set_(self, source);
}
at::Tensor& set_tensor(at::Tensor& self, const at::Tensor& source) {
  return at::native::set_tensor_(self, source);
}
at::Tensor& set_empty(at::Tensor& self) {
  c10::Storage st(c10::Storage::use_byte_size_t(), 0, neuron_allocator(), true);
  return at::cpu::set_(self, st, 0, {0}, {});
}

// Host<->device and device<->device transfers. Both sides are viewed as CPU tensors over
// their own memory, so a contiguous copy is one memcpy with no staging buffer.
at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  if (fast_device_copy(self, dst, non_blocking)) return dst;  // one device: no aliases needed
  if (self.device().type() == kNeuron && !dst.device().is_privateuseone()) {
    sync_for_host_read(self.device().index());  // device -> host: a host read
  }
  at::Tensor d = host_alias(dst);
  at::Tensor s = host_alias(self);
  // Both sides on one device storage: give them one host storage, as on CPU, so CPU's copy_
  // sees the aliasing (its same-data early exit, TensorIterator's partial-overlap error for
  // `y[1:].copy_(y[:-1])`), as the generic op path does (kernel.cpp, alias_arg).
  if (self.device() == dst.device() && self.device().type() == kNeuron &&
      self.storage().unsafeGetStorageImpl() == dst.storage().unsafeGetStorageImpl() &&
      s.storage().unsafeGetStorageImpl() != d.storage().unsafeGetStorageImpl())
    s = host_alias_on(self, d.storage());
  int route = dst.device().type() == kNeuron ? dst.device().index() : -1;
  AllocRouteGuard routed(route);
  at::native::copy_(d, s, non_blocking);
  if (C10_UNLIKELY(perf_enabled())) {  // the transfer, for the performance model
    const int dev = self.device().type() == kNeuron ? self.device().index() : route;
    c10::IValue out(dst);
    report_op("aten::_copy_from", dev, {c10::IValue(self), c10::IValue(dst)}, &out, 1, 0, false);
  }
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  if (dst.sizes() != self.sizes()) {
    if (dst.device().type() == kNeuron) {
      resize_(dst, self.sym_sizes(), std::nullopt);
    } else {
      at::native::resize_(dst, self.sizes(), std::nullopt);
    }
  }
  return copy_from(self, dst, false);
}

// PyTorch's copy-on-write clone needs storages whose DataPtr context is the data pointer;
// device memory's context is its allocator block (runtime/caching_allocator.cpp), so the clone is
// made at once: the same values and an independent storage, as after the first write.
at::Tensor lazy_clone(const at::Tensor& self) { return self.clone(); }

at::Scalar local_scalar_dense(const at::Tensor& self) {
  sync_for_host_read(self.device().index());
  if (C10_UNLIKELY(perf_enabled())) {  // a device -> host read, for the performance model
    report_op("aten::_local_scalar_dense", self.device().index(), {c10::IValue(self)}, nullptr, 0,
              0, false);
  }
  return at::native::_local_scalar_dense_cpu(host_alias(self));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", empty_memory_format);
  m.impl("empty_strided", empty_strided);
  m.impl("view", view);
  m.impl("as_strided", as_strided);
  m.impl("_reshape_alias", reshape_alias);
  m.impl("resize_", resize_);
  m.impl("set_.source_Storage_storage_offset", set_storage_offset);
  m.impl("set_.source_Storage", set_storage);
  m.impl("set_.source_Tensor", set_tensor);
  m.impl("set_", set_empty);
  m.impl("_copy_from", copy_from);
  m.impl("_lazy_clone", lazy_clone);
  m.impl("_copy_from_and_resize", copy_from_and_resize);
  m.impl("_local_scalar_dense", local_scalar_dense);
}

// Copies handle the conjugate/negative bits themselves (host aliases carry them and the host
// copy materialises them), as CPU's copy_ does. Without this, PyTorch's conj fallback would
// resolve the source by cloning it, which copies, which resolves... forever.
TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}
TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}
}  // namespace torch_neuronx
