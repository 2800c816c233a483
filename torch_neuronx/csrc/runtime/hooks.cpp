// PrivateUse1 hooks: how PyTorch's core asks the neuron backend about devices,
// generators, pinned memory and storage resizing.
#include "runtime/allocator.h"
#include "runtime/generator.h"
#include "runtime/runtime.h"

#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/StorageImpl.h>

// From ATen/native/Resize.h (libtorch_cpu), declared here instead of included: that header
// (TensorUtils.h, EmptyTensor.h, ...) cost this file more compile time than all the rest of it
// (issue 27). torch is pinned to one version (pyproject.toml), and a changed signature would
// fail at import with an undefined symbol.
namespace at::native {
TORCH_API void resize_bytes_cpu(c10::StorageImpl* storage, size_t size_bytes);
}  // namespace at::native

namespace torch_neuronx {
namespace {

struct NeuronHooks final : public at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return device_count() > 0; }
  void init() const override { lazy_init(); }
  bool hasPrimaryContext(c10::DeviceIndex /*device_index*/) const override {
    return is_initialized();
  }
  c10::DeviceIndex deviceCount() const override { return c10::DeviceIndex(device_count()); }
  void setCurrentDevice(c10::DeviceIndex d) const override { set_current_device(d); }
  c10::DeviceIndex getCurrentDevice() const override { return c10::DeviceIndex(current_device()); }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex d) const override {
    auto old = c10::DeviceIndex(current_device());
    set_current_device(d);
    return old;
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex d) const override {
    if (d < 0 || d >= device_count()) return c10::DeviceIndex(current_device());
    return exchangeDevice(d);
  }
  const at::Generator& getDefaultGenerator(c10::DeviceIndex index) const override {
    return default_generator(index);
  }
  at::Generator getNewGenerator(c10::DeviceIndex index) const override {
    return new_generator(index);
  }
  at::Device getDeviceFromPtr(void* data) const override {
    int d = device_of_ptr(data);
    TORCH_CHECK(d >= 0, "The pointer ", data,
                " is not in the memory of any neuron device (it is host memory, or was freed).");
    return at::Device(kNeuron, c10::DeviceIndex(d));
  }
  bool isPinnedPtr(const void* data) const override { return is_pinned_ptr(data); }
  at::Allocator* getPinnedMemoryAllocator() const override { return pinned_host_allocator(); }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const override {
    at::native::resize_bytes_cpu(storage.unsafeGetStorageImpl(), newsize);
  }
};

// Registered at load time (static initialiser of the extension).
struct Register {
  Register() {
    static NeuronHooks hooks;
    at::RegisterPrivateUse1HooksInterface(&hooks);
  }
} g_register;

}  // namespace
}  // namespace torch_neuronx
