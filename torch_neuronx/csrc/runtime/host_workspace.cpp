// Host workspace: the memory of the CPU kernels that run for an emulated core (a pool per device
// that is host RAM, not device memory), adoption of a kernel's outputs as device memory, and the
// routing CPU allocator that sends a kernel's CPU allocations there. Its own file (issue 27 split
// allocator.cpp by concept): its pointers are found by address (the live map), device memory by
// its Block.
#include "runtime/allocator_pool.h"

#include "runtime/memory_history.h"
#include "runtime/runtime.h"

#include <c10/core/CPUAllocator.h>

#include <cstring>
#include <functional>
#include <unordered_map>

namespace torch_neuronx {
namespace alloc {
namespace {

// Live host-workspace blocks by address. Their DataPtrs carry the data pointer as their
// context, as c10's raw_allocate()/raw_deallocate() contract requires (CPU kernels such as
// oneDNN's bf16 GEMM allocate scratch through the CPU allocator's raw interface while routing
// is on). Device-memory DataPtrs carry their Block instead (no lookup, no global lock per
// tensor: see delete_device_block).
// Leaked on purpose (like all driver globals): tensors may be freed during interpreter
// shutdown, after static destructors would have run.
std::mutex& g_live_mu = *new std::mutex;
using LiveMap = std::unordered_map<void*, Block*, std::hash<void*>, std::equal_to<void*>,
                                   PooledAllocator<std::pair<void* const, Block*>>>;
LiveMap& g_live = *new LiveMap;

void register_block(Block* b) {
  std::lock_guard<std::mutex> g(g_live_mu);
  g_live[b->ptr] = b;
}

Block* take_block(void* ptr) {
  std::lock_guard<std::mutex> g(g_live_mu);
  auto it = g_live.find(ptr);
  if (it == g_live.end()) return nullptr;
  Block* b = it->second;
  g_live.erase(it);
  return b;
}

}  // namespace

void delete_block(void* ptr) noexcept {
  release_or_report(ptr, [ptr] {
    Block* b = take_block(ptr);
    if (!b) return deleter_fault(ptr, "the pointer was not allocated by the neuron allocator");
    free_block(b);
  });
}

namespace {

thread_local int t_route = -1;
c10::Allocator* g_orig_cpu = nullptr;

// Device memory handed to a CPU kernel through the routing allocator (kRouteDeviceMemory):
// a block of the device pool, registered as live so that the DataPtr can carry the data
// pointer as its context (c10's raw_allocate contract) and delete_block can find the block.
c10::DataPtr allocate_routed_device(int device, size_t n) {
  lazy_init();
  auto& a = get(device);
  if (n == 0) return c10::DataPtr(nullptr, c10::Device(c10::kCPU));
  auto ctx = memory_history_context(/*at_free=*/false);
  Block* b = a.allocate(n, ctx);
  register_block(b);
  if (C10_UNLIKELY(memory_history_enabled() || c10::memoryProfilingEnabled())) {
    report_block(a, b->ptr, b->size, /*alloc=*/true, ctx);
  }
  return c10::DataPtr(b->ptr, b->ptr, &delete_block, c10::Device(c10::kCPU));
}

// The CPU allocator, made route-aware: CPU kernels that run for the emulated core
// allocate their outputs straight from that core's memory pool.
struct RoutingCPUAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t n) override {
    if (t_route >= 0) {
      if (t_route & kRouteDeviceMemory)
        return allocate_routed_device(t_route & ~kRouteDeviceMemory, n);
      return allocate_workspace(t_route, n);
    }
    return g_orig_cpu->allocate(n);
  }
  c10::DeleterFnPtr raw_deleter() const override { return &routing_raw_delete; }
  static void routing_raw_delete(void* ptr) noexcept {
    release_or_report(ptr, [ptr] {
      if (Block* b = take_block(ptr)) {
        free_block(b);
      } else {
        g_orig_cpu->raw_deleter()(ptr);
      }
    });
  }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
};

RoutingCPUAllocator g_routing;

}  // namespace
}  // namespace alloc

using namespace alloc;

c10::DataPtr allocate_workspace(int device, size_t nbytes) {
  lazy_init();
  auto& w = get_ws(device);
  if (nbytes == 0) return c10::DataPtr(nullptr, c10::Device(c10::kCPU));
  Block* b = w.allocate(nbytes, nullptr);
  register_block(b);
  return c10::DataPtr(b->ptr, b->ptr, &delete_block, c10::Device(c10::kCPU));
}

bool adopt_as_device_memory(const c10::DataPtr& dp, int device) {
  if (dp.get_deleter() == &delete_device_block)  // device memory already
    return static_cast<const Block*>(dp.get_context())->device == device;
  if (dp.get_deleter() != &delete_block) return false;
  Block* b;
  {
    std::lock_guard<std::mutex> g(g_live_mu);
    auto it = g_live.find(dp.get());
    if (it == g_live.end()) return false;
    b = it->second;  // stays live: the caller holds `dp`
  }
  if (b->device != device) return false;
  if (!b->workspace) return true;
  auto& a = get(device);
  auto ctx = memory_history_context(/*at_free=*/false);
  {
    std::lock_guard<std::mutex> g(a.mu);
    if (b->adopted) return true;
    a.context = ctx;
    struct ClearContext {
      std::shared_ptr<c10::GatheredContext>& c;
      ~ClearContext() { c = nullptr; }
    } clear_context{a.context};
    a.adopt_locked(b);
  }
  {
    auto& w = get_ws(device);
    std::lock_guard<std::mutex> g(w.mu);
    w.count_block(b, -1);  // the device counts it now
  }
  if (C10_UNLIKELY(memory_history_enabled() || c10::memoryProfilingEnabled())) {
    report_block(a, b->ptr, b->size, /*alloc=*/true, ctx);
  }
  return true;
}

void debug_free_unknown_pointer() {
  static char not_ours[64];
  c10::DataPtr dp(not_ours, not_ours, &delete_block, c10::Device(kNeuron, 0));
}

int set_alloc_route(int route) {
  if (route >= 0) check_device_index(route & ~kRouteDeviceMemory);
  int prev = t_route;
  t_route = route;
  return prev;
}
int alloc_route() { return t_route; }

void install_routing_cpu_allocator() {
  if (g_orig_cpu) return;
  g_orig_cpu = c10::GetCPUAllocator();
  c10::SetCPUAllocator(&g_routing, /*priority=*/10);
}
c10::Allocator* routing_cpu_allocator() { return &g_routing; }

}  // namespace torch_neuronx
