// Device-side events of the emulated NeuronCores in torch.profiler.
//
// The driver registers a Kineto child activity profiler for PrivateUse1 (PyTorch's
// PrivateUse1ProfilerRegistry, the same integration point as PyTorch's OpenReg test backend).
// While `torch.profiler.profile(activities=[..., ProfilerActivity.PrivateUse1])` records, each
// piece of device work reported through `record_device_work` becomes
//   - a device event on the track of its neuron device (Chrome trace pid = device index), with
//     its modeled Trainium duration, and
//   - a host "launch" event on the reporting thread, joined to it by a flow arrow,
// both linked to the ATen op whose correlation id is on top of the reporting thread's stack
// (Kineto pushes one for every op the profiler records). key_averages() therefore shows the
// modeled time as the op's device time, exactly as CUDA kernels show under the op that
// launched them.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace torch_neuronx {

// One piece of device work, as the performance model (torch_neuronx.perf) costs it.
struct DeviceWork {
  int device = 0;
  std::string kind;    // op | kernel | graph | collective | copy | fallback
  std::string name;    // e.g. aten::mm, a compiled kernel's name, all_reduce
  std::string engine;  // tensor | vector | scalar | gpsimd | dma | collective | host | launch
  std::string shapes;
  std::string dtype;
  std::string bound;  // compute | memory | launch | network | link | host
  std::string detail;
  double flops = 0.0;
  double bytes = 0.0;
  int64_t duration_ns = 0;  // modeled Trainium time
};

// True while a profiler session with the PrivateUse1 activity is recording (a relaxed load).
bool device_trace_active();

// Records `work` as launched now by the calling thread. No-op when no session records.
void record_device_work(const DeviceWork& work);

// Called when a recording session starts / stops (on the thread that starts / stops the
// profiler); the Python layer uses them to switch the performance model on for the session.
void set_device_trace_callbacks(std::function<void()> on_start, std::function<void()> on_stop);

// Number of sessions the driver's Kineto profiler has created (for tests).
int64_t device_trace_sessions();

}  // namespace torch_neuronx
