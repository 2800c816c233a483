// Device guard, streams and events of the emulated NeuronCore.
// Execution is synchronous today: every op has completed when it returns, so streams are
// always idle and events complete at record time. The interface is CUDA's, so an
// asynchronous queue per stream can be added behind it later without user-visible change.
#include "runtime/runtime.h"
#include "runtime/sync.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>

#include <array>
#include <atomic>
#include <chrono>
#include <vector>

namespace torch_neuronx {
namespace {

using c10::Device;
using c10::DeviceIndex;
using c10::Stream;
using c10::StreamId;

std::atomic<StreamId> g_next_stream{1};
// The current stream of each device index on this thread (0: the default stream). The autograd
// engine reads and exchanges it around every backward node: a flat array, not a map. Slot 0
// holds index -1 (a device without an index), as the map did.
constexpr int kStreamSlots = 129;  // DeviceIndex is int8_t: -1..127
thread_local std::array<StreamId, kStreamSlots> t_current_stream{};
StreamId& current_stream_slot(DeviceIndex d) { return t_current_stream[size_t(int(d) + 1)]; }

struct Event {
  DeviceIndex device;
  bool timing;
  bool recorded = false;
  double time_ms = 0;
};

double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

struct NeuronGuardImpl final : public c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return kNeuron; }

  Device exchangeDevice(Device d) const override {
    Device old(kNeuron, DeviceIndex(current_device()));
    if (d.index() != old.index()) set_current_device(d.index());
    return old;
  }
  Device getDevice() const override { return Device(kNeuron, DeviceIndex(current_device())); }
  void setDevice(Device d) const override { set_current_device(d.index()); }
  void uncheckedSetDevice(Device d) const noexcept override {
    if (d.index() >= 0 && d.index() < device_count()) set_current_device(d.index());
  }

  Stream getStream(Device d) const override {
    return Stream(Stream::UNSAFE, d, current_stream_slot(d.index()));
  }
  Stream getDefaultStream(Device d) const override { return Stream(Stream::UNSAFE, d, 0); }
  Stream getNewStream(Device d, int /*priority*/) const override {
    if (!d.has_index()) d = Device(kNeuron, DeviceIndex(current_device()));
    check_device_index(d.index());
    return Stream(Stream::UNSAFE, d, g_next_stream++);
  }
  Stream getStreamFromGlobalPool(Device d, bool /*high_priority*/) const override {
    return getNewStream(d, 0);
  }
  Stream exchangeStream(Stream s) const override {
    Stream old = getStream(s.device());
    current_stream_slot(s.device_index()) = s.id();
    return old;
  }
  DeviceIndex deviceCount() const noexcept override { return DeviceIndex(device_count()); }

  bool queryStream(const Stream&) const override { return true; }
  void synchronizeStream(const Stream& s) const override { synchronize_device(s.device_index()); }
  void synchronizeDevice(DeviceIndex d) const override { synchronize_device(d); }

  void record(void** event, const Stream& stream, const DeviceIndex device_index,
              const c10::EventFlag flag) const override {
    TORCH_CHECK(device_index == -1 || device_index == stream.device_index(), "Event device index ",
                device_index, " does not match the recording stream's device ",
                stream.device_index(), ".");
    auto* e = static_cast<Event*>(*event);
    if (!e) {
      e = new Event{stream.device_index(), flag == c10::EventFlag::BACKEND_DEFAULT};
      *event = e;
    }
    // Work queued on `stream` before this point has completed (synchronous execution).
    e->recorded = true;
    e->time_ms = now_ms();
  }
  void block(void* /*event*/, const Stream& /*stream*/) const override {}
  bool queryEvent(void* /*event*/) const override { return true; }
  void synchronizeEvent(void* /*event*/) const override {}
  void destroyEvent(void* event, const DeviceIndex) const noexcept override {
    delete static_cast<Event*>(event);
  }
  double elapsedTime(void* start, void* end, const DeviceIndex) const override {
    auto* a = static_cast<Event*>(start);
    auto* b = static_cast<Event*>(end);
    TORCH_CHECK(
        a && b && a->recorded && b->recorded,
        "elapsed_time: both events must have been recorded before computing the elapsed time.");
    TORCH_CHECK(a->timing && b->timing,
                "elapsed_time: both events must be created with enable_timing=True.");
    return b->time_ms - a->time_ms;
  }
  void recordDataPtrOnStream(const c10::DataPtr&, const Stream&) const override {}
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, NeuronGuardImpl);

}  // namespace
}  // namespace torch_neuronx
