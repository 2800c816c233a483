// Device memory of the emulated NeuronCores: a caching segment allocator per device,
// shaped like TorchNeuron's (small/large pools, size classes, reserved >= allocated),
// with the emulated HBM capacity enforced.
#pragma once

#include <c10/core/Allocator.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace torch_neuronx {

// The allocator registered for PrivateUse1 (allocates on the current device).
c10::Allocator* neuron_allocator();

// Allocate on a given device. `label` is the device recorded in the DataPtr: the
// device itself for neuron storages, CPU for memory handed to CPU kernels that run on
// the emulated core (see host_alias.h).
c10::DataPtr allocate_on(int device, size_t nbytes, c10::Device label);
// Whether `dp` is device memory from allocate_on; share_device_memory(dp) is one more owner of
// those bytes (the block returns to its pool when the last owner lets go), so a host alias can
// keep them alive without holding a reference to the neuron storage (host_alias.cpp).
bool is_device_memory(const c10::DataPtr& dp);
c10::DataPtr share_device_memory(const c10::DataPtr& dp, c10::Device label);

// Host workspace for a CPU kernel running for `device` (what allocation routing hands out):
// host memory, counted in memory_stats' `host_workspace.*`, never against the device's capacity.
c10::DataPtr allocate_workspace(int device, size_t nbytes);

// True when `dp`'s memory is (now) device memory of `device`: memory of its pool, or host
// workspace of `device` that this call adopts as device memory (a kernel's output: from now on
// it counts against the device's capacity, raising its out-of-memory error when it does not
// fit). False for other memory (the caller copies it).
bool adopt_as_device_memory(const c10::DataPtr& dp, int device);

// The device whose memory (a segment, or an adopted block) contains `ptr`, or -1.
int device_of_ptr(const void* ptr);

// Test hook: runs the allocator's deleter on a pointer it never allocated (the error is
// reported on stderr and the process continues).
void debug_free_unknown_pointer();

// Statistics, keyed with torch.cuda.memory_stats() names.
std::map<std::string, int64_t> memory_stats(int device);
void reset_peak_stats(int device);
void reset_accumulated_stats(int device);
void empty_cache(int device);  // -1: all devices

// The segments of `device` and their blocks in address order (memory snapshots).
struct BlockInfo {
  uint64_t address;
  int64_t size;
  int64_t requested;  // bytes asked for (allocated blocks)
  bool allocated;
};
struct SegmentInfo {
  int device;
  uint64_t address;
  int64_t total_size;
  bool small;  // small pool (< 1 MiB requests)
  std::vector<BlockInfo> blocks;
};
std::vector<SegmentInfo> segment_infos(int device);

// CPU allocations of the calling thread go to `device`'s host workspace while set (-1: off).
// `route` is the device index, optionally with kRouteDeviceMemory set: allocations then come
// from the device's memory itself (capacity-checked, counted in its statistics from the
// moment they are made, raising its out-of-memory error): a compiled graph's intermediates,
// which on Trainium live in HBM. Returns the previous route.
constexpr int kRouteDeviceMemory = 1 << 16;
int set_alloc_route(int route);
int alloc_route();

// Routes this thread's CPU allocations to `route` for the guard's lifetime (-1: off).
struct AllocRouteGuard {
  explicit AllocRouteGuard(int route) : prev_(set_alloc_route(route)) {}
  ~AllocRouteGuard() { set_alloc_route(prev_); }
  AllocRouteGuard(const AllocRouteGuard&) = delete;
  AllocRouteGuard& operator=(const AllocRouteGuard&) = delete;

 private:
  int prev_;
};

// Installs the routing CPU allocator (once, at load).
void install_routing_cpu_allocator();
c10::Allocator* routing_cpu_allocator();

// Host allocator standing in for pinned memory (tracks its own pointers).
c10::Allocator* pinned_host_allocator();
bool is_pinned_ptr(const void* p);

}  // namespace torch_neuronx
