#include "runtime/allocator.h"

#include "runtime/runtime.h"

#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace torch_neuronx {
namespace {

constexpr size_t kMinBlock = 256;           // smallest size class
constexpr size_t kSmallLimit = 1 << 20;     // requests below 1 MiB use the small pool
constexpr size_t kRoundLimit = 16 << 20;    // no size-class rounding from 16 MiB up
constexpr size_t kSmallSegment = 2 << 20;   // small-pool segments
constexpr size_t kLargeSegment = 20 << 20;  // large-pool segments for 1-10 MiB requests
constexpr size_t kLargeSegmentLimit = 10 << 20;
constexpr size_t kSegmentRound = 2 << 20;
constexpr size_t kAlign = 64;

enum Pool { kAll = 0, kSmall = 1, kLarge = 2 };

struct Stat {
  int64_t current = 0, peak = 0, allocated = 0, freed = 0;
  void add(int64_t d) {
    current += d;
    if (d > 0)
      allocated += d;
    else
      freed += -d;
    if (current > peak) peak = current;
  }
  void reset_peak() { peak = current; }
  void reset_accumulated() {
    allocated = 0;
    freed = 0;
  }
};

struct StatArray {
  Stat s[3];
  void add(bool small, int64_t d) {
    s[kAll].add(d);
    s[small ? kSmall : kLarge].add(d);
  }
};

struct Block {
  int device;
  bool small;
  bool allocated = false;
  size_t size;
  size_t requested = 0;
  char* ptr;
  Block* prev = nullptr;
  Block* next = nullptr;
};

struct BlockLess {
  bool operator()(const Block* a, const Block* b) const {
    return a->size != b->size ? a->size < b->size : a->ptr < b->ptr;
  }
};

size_t round_size(size_t n) {
  if (n <= kMinBlock) return kMinBlock;
  if (n >= kRoundLimit) return (n + 511) & ~size_t(511);
  // Four size classes per power of two (like CUDA's roundup_power2_divisions=4).
  size_t p = size_t(1) << (63 - __builtin_clzll(n - 1));  // largest power of two < n
  size_t step = std::max(p / 4, kMinBlock);
  return (n + step - 1) / step * step;
}

struct DeviceAllocator {
  int device;
  std::mutex mu;
  std::set<Block*, BlockLess> free_small, free_large;
  StatArray allocated_bytes, reserved_bytes, active_bytes, requested_bytes;
  StatArray allocation, segment, active, inactive_split, inactive_split_bytes;
  int64_t num_alloc_retries = 0, num_ooms = 0, num_device_alloc = 0, num_device_free = 0;

  std::set<Block*, BlockLess>& pool(bool small) { return small ? free_small : free_large; }

  // Every statistic with its torch.cuda name, in memory_stats() order.
  std::array<std::pair<const char*, StatArray*>, 9> stats() {
    return {{{"allocated_bytes", &allocated_bytes},
             {"reserved_bytes", &reserved_bytes},
             {"active_bytes", &active_bytes},
             {"requested_bytes", &requested_bytes},
             {"allocation", &allocation},
             {"segment", &segment},
             {"active", &active},
             {"inactive_split", &inactive_split},
             {"inactive_split_bytes", &inactive_split_bytes}}};
  }

  bool release_cached_segments() {
    bool released = false;
    for (auto* p : {&free_small, &free_large}) {
      for (auto it = p->begin(); it != p->end();) {
        Block* b = *it;
        if (!b->prev && !b->next) {  // the whole segment is free
          reserved_bytes.add(b->small, -int64_t(b->size));
          segment.add(b->small, -1);
          num_device_free++;
          std::free(b->ptr);
          it = p->erase(it);
          delete b;
          released = true;
        } else {
          ++it;
        }
      }
    }
    return released;
  }

  [[noreturn]] void raise_oom(size_t requested) {
    num_ooms++;
    auto mib = [](int64_t b) {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%.2f", double(b) / (1 << 20));
      return std::string(buf);
    };
    int64_t cap = device_capacity(device);
    TORCH_CHECK_WITH(
        OutOfMemoryError, false, "neuron:", device, " out of memory. Tried to allocate ",
        mib(requested), " MiB on neuron:", device, " (emulated NeuronCore of '", profile_name(),
        "', HBM capacity ", mib(cap), " MiB, of which ", mib(cap - reserved_bytes.s[kAll].current),
        " MiB is not reserved). ", mib(allocated_bytes.s[kAll].current),
        " MiB is allocated by PyTorch and ", mib(reserved_bytes.s[kAll].current),
        " MiB is reserved (allocated + cached). Free tensors you no longer need, call "
        "torch.neuron.empty_cache(), or use smaller batches; tests can raise the capacity with "
        "TORCH_NEURONX_HBM_PER_CORE.");
  }

  Block* new_segment(size_t rounded, bool small) {
    size_t seg = small                          ? kSmallSegment
                 : rounded < kLargeSegmentLimit ? kLargeSegment
                 : rounded < kRoundLimit
                     ? (rounded + kSegmentRound - 1) / kSegmentRound * kSegmentRound
                     : rounded;  // >= 16 MiB: a segment of exactly the (512 B aligned) request
    int64_t cap = device_capacity(device);
    auto fits = [&](size_t s) { return reserved_bytes.s[kAll].current + int64_t(s) <= cap; };
    if (!fits(seg)) {
      num_alloc_retries++;
      release_cached_segments();
      if (!fits(seg)) {
        seg = rounded;  // a segment of exactly the request, when the usual size does not fit
        if (!fits(seg)) raise_oom(rounded);
      }
    }
    void* mem = nullptr;
    if (posix_memalign(&mem, 4096, seg) != 0 || !mem) {
      release_cached_segments();
      if (posix_memalign(&mem, 4096, seg) != 0 || !mem) raise_oom(rounded);
    }
    num_device_alloc++;
    reserved_bytes.add(small, int64_t(seg));
    segment.add(small, 1);
    auto* b = new Block{device, small};
    b->size = seg;
    b->ptr = static_cast<char*>(mem);
    return b;
  }

  Block* allocate(size_t nbytes) {
    std::lock_guard<std::mutex> g(mu);
    size_t rounded = round_size(nbytes);
    bool small = rounded < kSmallLimit;
    auto& p = pool(small);
    Block* b = nullptr;
    Block key{device, small};
    key.size = rounded;
    key.ptr = nullptr;
    auto it = p.lower_bound(&key);
    if (it != p.end()) {
      b = *it;
      p.erase(it);
      if (b->prev || b->next) {  // it was an inactive split
        inactive_split.add(small, -1);
        inactive_split_bytes.add(small, -int64_t(b->size));
      }
    } else {
      b = new_segment(rounded, small);
    }
    // Split off the remainder when it is worth keeping.
    size_t remaining = b->size - rounded;
    if (remaining >= (small ? kMinBlock : kSmallLimit)) {
      auto* rest = new Block{device, small};
      rest->size = remaining;
      rest->ptr = b->ptr + rounded;
      rest->prev = b;
      rest->next = b->next;
      if (b->next) b->next->prev = rest;
      b->next = rest;
      b->size = rounded;
      p.insert(rest);
      inactive_split.add(small, 1);
      inactive_split_bytes.add(small, int64_t(rest->size));
    }
    b->allocated = true;
    b->requested = nbytes;
    allocated_bytes.add(small, int64_t(b->size));
    active_bytes.add(small, int64_t(b->size));
    requested_bytes.add(small, int64_t(nbytes));
    allocation.add(small, 1);
    active.add(small, 1);
    return b;
  }

  void free(Block* b) {
    std::lock_guard<std::mutex> g(mu);
    bool small = b->small;
    allocated_bytes.add(small, -int64_t(b->size));
    active_bytes.add(small, -int64_t(b->size));
    requested_bytes.add(small, -int64_t(b->requested));
    allocation.add(small, -1);
    active.add(small, -1);
    b->allocated = false;
    auto& p = pool(small);
    auto merge = [&](Block* dst, Block* src) {  // src is a free neighbour of dst; absorb it
      p.erase(src);
      inactive_split.add(small, -1);
      inactive_split_bytes.add(small, -int64_t(src->size));
      if (src == dst->prev) {
        dst->ptr = src->ptr;
        dst->prev = src->prev;
        if (dst->prev) dst->prev->next = dst;
      } else {
        dst->next = src->next;
        if (dst->next) dst->next->prev = dst;
      }
      dst->size += src->size;
      delete src;
    };
    if (b->prev && !b->prev->allocated) merge(b, b->prev);
    if (b->next && !b->next->allocated) merge(b, b->next);
    if (b->prev || b->next) {
      inactive_split.add(small, 1);
      inactive_split_bytes.add(small, int64_t(b->size));
    }
    p.insert(b);
  }
};

// One allocator per device, created on first use and never destroyed; lookups are lock-free.
constexpr int kMaxDevices = 1024;
std::atomic<DeviceAllocator*> g_allocators[kMaxDevices];
std::mutex& g_allocators_mu = *new std::mutex;

DeviceAllocator& get(int device) {
  if (C10_LIKELY(device >= 0 && device < kMaxDevices)) {
    if (DeviceAllocator* a = g_allocators[device].load(std::memory_order_acquire)) return *a;
  }
  check_device_index(device);
  std::lock_guard<std::mutex> g(g_allocators_mu);
  if (!g_allocators[device].load()) {
    auto* a = new DeviceAllocator();
    a->device = device;
    g_allocators[device].store(a, std::memory_order_release);
  }
  return *g_allocators[device].load();
}

// Live blocks by address. DataPtrs carry the data pointer as their context, as c10's
// raw_allocate()/raw_deallocate() contract requires (CPU kernels such as oneDNN's bf16 GEMM
// allocate scratch through the CPU allocator's raw interface while routing is on).
// Leaked on purpose (like all driver globals): tensors may be freed during interpreter
// shutdown, after static destructors would have run.
std::mutex& g_live_mu = *new std::mutex;
std::unordered_map<void*, Block*>& g_live = *new std::unordered_map<void*, Block*>;

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

void delete_block(void* ptr) {
  Block* b = take_block(ptr);
  TORCH_INTERNAL_ASSERT(b, "neuron allocator: freeing an unknown pointer");
  get(b->device).free(b);
}

struct NeuronAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t n) override {
    int dev = current_device();
    return allocate_on(dev, n, c10::Device(kNeuron, dev));
  }
  c10::DeleterFnPtr raw_deleter() const override { return &delete_block; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
};

thread_local int t_route = -1;
c10::Allocator* g_orig_cpu = nullptr;

// The CPU allocator, made route-aware: CPU kernels that run for the emulated core
// allocate their outputs straight from that core's memory pool.
struct RoutingCPUAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t n) override {
    if (t_route >= 0) return allocate_on(t_route, n, c10::Device(c10::kCPU));
    return g_orig_cpu->allocate(n);
  }
  c10::DeleterFnPtr raw_deleter() const override { return &routing_raw_delete; }
  static void routing_raw_delete(void* ptr) {
    if (Block* b = take_block(ptr)) {
      get(b->device).free(b);
    } else {
      g_orig_cpu->raw_deleter()(ptr);
    }
  }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
};

RoutingCPUAllocator g_routing;
NeuronAllocator g_neuron_allocator;

std::mutex& g_pinned_mu = *new std::mutex;
std::unordered_set<const void*>& g_pinned = *new std::unordered_set<const void*>;
void delete_pinned(void* p) {
  {
    std::lock_guard<std::mutex> g(g_pinned_mu);
    g_pinned.erase(p);
  }
  std::free(p);
}
struct PinnedHostAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t n) override {
    if (n == 0) return c10::DataPtr(nullptr, c10::Device(c10::kCPU));
    void* p = nullptr;
    TORCH_CHECK(posix_memalign(&p, 64, n) == 0 && p, "pinned host allocation of ", n,
                " bytes failed");
    {
      std::lock_guard<std::mutex> g(g_pinned_mu);
      g_pinned.insert(p);
    }
    return c10::DataPtr(p, p, &delete_pinned, c10::Device(c10::kCPU));
  }
  c10::DeleterFnPtr raw_deleter() const override { return &delete_pinned; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
};
PinnedHostAllocator g_pinned_allocator;

}  // namespace

c10::Allocator* neuron_allocator() { return &g_neuron_allocator; }

c10::DataPtr allocate_on(int device, size_t nbytes, c10::Device label) {
  lazy_init();
  auto& a = get(device);
  if (nbytes == 0) return c10::DataPtr(nullptr, label);
  Block* b = a.allocate(nbytes);
  register_block(b);
  return c10::DataPtr(b->ptr, b->ptr, &delete_block, label);
}

int owner_device(const c10::DataPtr& dp) {
  if (dp.get_deleter() != &delete_block) return -1;
  std::lock_guard<std::mutex> g(g_live_mu);
  auto it = g_live.find(dp.get());
  return it == g_live.end() ? -1 : it->second->device;
}

std::map<std::string, int64_t> memory_stats(int device) {
  auto& a = get(device);
  std::lock_guard<std::mutex> g(a.mu);
  std::map<std::string, int64_t> out;
  const char* pools[3] = {"all", "small_pool", "large_pool"};
  auto put = [&](const char* name, StatArray& arr) {
    for (int i = 0; i < 3; ++i) {
      std::string base = std::string(name) + "." + pools[i] + ".";
      out[base + "current"] = arr.s[i].current;
      out[base + "peak"] = arr.s[i].peak;
      out[base + "allocated"] = arr.s[i].allocated;
      out[base + "freed"] = arr.s[i].freed;
    }
  };
  for (auto [name, arr] : a.stats()) put(name, *arr);
  out["num_alloc_retries"] = a.num_alloc_retries;
  out["num_ooms"] = a.num_ooms;
  out["num_device_alloc"] = a.num_device_alloc;
  out["num_device_free"] = a.num_device_free;
  out["num_sync_all_streams"] = 0;
  out["max_split_size"] = -1;
  return out;
}

void reset_peak_stats(int device) {
  auto& a = get(device);
  std::lock_guard<std::mutex> g(a.mu);
  for (auto [name, arr] : a.stats())
    for (auto& s : arr->s) s.reset_peak();
}

void reset_accumulated_stats(int device) {
  auto& a = get(device);
  std::lock_guard<std::mutex> g(a.mu);
  for (auto [name, arr] : a.stats())
    for (auto& s : arr->s) s.reset_accumulated();
  a.num_alloc_retries = a.num_ooms = a.num_device_alloc = a.num_device_free = 0;
}

void empty_cache(int device) {
  if (device < 0) {
    for (int d = 0; d < device_count(); ++d) empty_cache(d);
    return;
  }
  auto& a = get(device);
  std::lock_guard<std::mutex> g(a.mu);
  a.release_cached_segments();
}

int set_alloc_route(int device) {
  if (device >= 0) check_device_index(device);
  int prev = t_route;
  t_route = device;
  return prev;
}
int alloc_route() { return t_route; }

void install_routing_cpu_allocator() {
  if (g_orig_cpu) return;
  g_orig_cpu = c10::GetCPUAllocator();
  c10::SetCPUAllocator(&g_routing, /*priority=*/10);
}
c10::Allocator* routing_cpu_allocator() { return &g_routing; }

c10::Allocator* pinned_host_allocator() { return &g_pinned_allocator; }
bool is_pinned_ptr(const void* p) {
  std::lock_guard<std::mutex> g(g_pinned_mu);
  return g_pinned.count(p) > 0;
}

}  // namespace torch_neuronx

namespace torch_neuronx {
namespace {
// at::GetAllocator(PrivateUse1) is how PyTorch allocates storages directly
// (torch.UntypedStorage(n, device="neuron"), deserialisation).
struct RegisterAllocator {
  RegisterAllocator() { c10::SetAllocator(c10::DeviceType::PrivateUse1, neuron_allocator()); }
} g_register_allocator;
}  // namespace
}  // namespace torch_neuronx
