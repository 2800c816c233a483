// PyTorch's legacy profiler hooks for PrivateUse1 (torch::profiler::impl::ProfilerStubs), used
// by torch.autograd.profiler.profile(use_device="neuron", use_kineto=False).
//
// That mode times device work with device events recorded around each op; the emulated
// NeuronCore has no device timer, and its modeled time lives in the Kineto session
// (device_trace.cpp). So these stubs report CPU times only and say once, clearly, where the
// modeled device time is; without them every op of such a profile raises inside PyTorch's
// callbacks ("PrivateUse1 used in profiler but not enabled").
#include "runtime/runtime.h"
#include "runtime/sync.h"

#include <c10/util/ApproximateClock.h>
#include <c10/util/Exception.h>
#include <torch/csrc/profiler/stubs/base.h>

namespace torch_neuronx {
namespace {

using torch::profiler::impl::ProfilerStubs;
using torch::profiler::impl::ProfilerVoidEventStub;

struct NeuronProfilerStubs final : ProfilerStubs {
  void record(c10::DeviceIndex* device, ProfilerVoidEventStub* event,
              int64_t* cpu_ns) const override {
    TORCH_WARN_ONCE(
        "neuron: the legacy autograd profiler (use_kineto=False) has no device timing on the "
        "emulated NeuronCore; its device columns stay empty. For the modeled Trainium device "
        "time use torch.profiler.profile(activities=[ProfilerActivity.CPU, "
        "ProfilerActivity.PrivateUse1]).");
    if (device) *device = c10::DeviceIndex(current_device());
    if (event) event->reset();
    if (cpu_ns) *cpu_ns = c10::getTime();
  }
  // No device events were recorded (see record): no device time to report.
  float elapsed(const ProfilerVoidEventStub*, const ProfilerVoidEventStub*) const override {
    return 0.f;
  }
  // The emulated device has no annotation tool (CUDA's are NVTX ranges).
  void mark(const char*) const override {}
  void rangePush(const char*) const override {}
  void rangePop() const override {}
  bool enabled() const override { return true; }
  void onEachDevice(std::function<void(int)> op) const override {
    const int previous = current_device();
    for (int d = 0; d < device_count(); ++d) {
      set_current_device(d);
      op(d);
    }
    set_current_device(previous);
  }
  void synchronize() const override {
    for (int d = 0; d < device_count(); ++d) synchronize_device(d);
  }
};

struct RegisterNeuronProfilerStubs {
  RegisterNeuronProfilerStubs() {
    static NeuronProfilerStubs stubs;
    torch::profiler::impl::registerPrivateUse1Methods(&stubs);
  }
} g_register_profiler_stubs;

}  // namespace
}  // namespace torch_neuronx
