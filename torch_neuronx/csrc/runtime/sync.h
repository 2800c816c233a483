// The one synchronisation point for host reads of device data (.cpu(), .item(), printing).
// Execution is synchronous today, so this only counts; an asynchronous per-stream queue
// would drain here.
#pragma once

#include <atomic>
#include <cstdint>

namespace torch_neuronx {

inline std::atomic<int64_t>& host_read_syncs() {
  static std::atomic<int64_t> n{0};
  return n;
}

inline void synchronize_device(int /*device*/) {}

inline void sync_for_host_read(int device) {
  host_read_syncs().fetch_add(1, std::memory_order_relaxed);
  synchronize_device(device);
}

}  // namespace torch_neuronx
