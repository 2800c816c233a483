// The caching pool's algorithm (DeviceAllocator, allocator_pool.h) and device memory: best fit
// from the free blocks, splitting and merging within segments, new segments within the emulated
// HBM capacity, the out-of-memory error; allocate_on, the device-memory deleter and the
// PrivateUse1 allocator. Kept together, apart from the allocator's other files, because a
// tensor's allocation and free run through all of it (issue 27 split allocator.cpp by concept).
#include "runtime/allocator_pool.h"

#include "runtime/log.h"
#include "runtime/memory_history.h"
#include "runtime/runtime.h"

#include <cstdlib>
#include <cstring>
#include <string>

namespace torch_neuronx {
namespace alloc {

bool DeviceAllocator::release_cached_segments() {
  bool released = false;
  auto release = [&](Block* b) {
    if (b->prev || b->next) return;  // part of a segment in use
    reserved_bytes.add(b->small, -int64_t(b->size));
    segment.add(b->small, -1);
    num_device_free++;
    segment_first.erase(b->ptr);
    if (!workspace)
      memory_history_record(device, MemAction::SegmentFree, uint64_t(b->ptr), int64_t(b->size),
                            context);
    if (log_enabled(kLogDebug)) {
      log_message(kLogDebug, "torch_neuronx.runtime",
                  "neuron:" + std::to_string(device) + " released a segment of " +
                      std::to_string(b->size) + " bytes");
    }
    std::free(b->ptr);
    pool_erase(b);
    delete_block_object(b);
    released = true;
  };
  free_small.for_each(release);
  free_large.for_each(release);
  return released;
}

void DeviceAllocator::raise_oom(size_t requested) {
  num_ooms++;
  memory_history_record(device, MemAction::Oom, 0, int64_t(requested), context,
                        device_capacity(device) - reserved_bytes.s[kAll].current);
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

Block* DeviceAllocator::new_segment(size_t rounded, bool small) {
  size_t seg = small                          ? kSmallSegment
               : rounded < kLargeSegmentLimit ? kLargeSegment
               : rounded < kRoundLimit
                   ? (rounded + kSegmentRound - 1) / kSegmentRound * kSegmentRound
                   : rounded;  // >= 16 MiB: a segment of exactly the (512 B aligned) request
  int64_t cap = device_capacity(device);
  auto fits = [&](size_t s) {
    return workspace || reserved_bytes.s[kAll].current + int64_t(s) <= cap;
  };
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
    if (posix_memalign(&mem, 4096, seg) != 0 || !mem) {
      TORCH_CHECK_WITH(OutOfMemoryError, !workspace, "neuron:", device,
                       " host workspace: the host has no memory for a ", seg,
                       "-byte buffer of a kernel running for the device.");
      raise_oom(rounded);
    }
  }
  num_device_alloc++;
  reserved_bytes.add(small, int64_t(seg));
  segment.add(small, 1);
  auto* b = new_block(device, small);
  b->size = seg;
  b->workspace = workspace;
  b->ptr = static_cast<char*>(mem);
  segment_first[b->ptr] = b;
  if (!workspace)
    memory_history_record(device, MemAction::SegmentAlloc, uint64_t(b->ptr), int64_t(seg), context);
  if (log_enabled(kLogDebug)) {
    log_message(kLogDebug, "torch_neuronx.runtime",
                "neuron:" + std::to_string(device) + " reserved a " + (small ? "small" : "large") +
                    "-pool segment of " + std::to_string(seg) + " bytes");
  }
  return b;
}

Block* DeviceAllocator::allocate(size_t nbytes, const std::shared_ptr<c10::GatheredContext>& ctx) {
  std::lock_guard<std::mutex> g(mu);
  context = ctx;
  struct ClearContext {
    std::shared_ptr<c10::GatheredContext>& c;
    ~ClearContext() { c = nullptr; }
  } clear_context{context};
  size_t rounded = round_size(nbytes);
  bool small = rounded < kSmallLimit;
  Block* b = small ? free_small.best_fit(rounded) : free_large.best_fit(rounded);
  if (b) {
    pool_erase(b);
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
    auto* rest = new_block(device, small);
    rest->workspace = workspace;
    rest->size = remaining;
    rest->ptr = b->ptr + rounded;
    rest->prev = b;
    rest->next = b->next;
    if (b->next) b->next->prev = rest;
    b->next = rest;
    b->size = rounded;
    pool_insert(rest);
    inactive_split.add(small, 1);
    inactive_split_bytes.add(small, int64_t(rest->size));
  }
  b->allocated = true;
  b->requested = nbytes;
  count_block(b, +1);
  return b;
}

void DeviceAllocator::adopt_locked(Block* b) {
  const int64_t cap = device_capacity(device);
  auto fits = [&] { return reserved_bytes.s[kAll].current + int64_t(b->size) <= cap; };
  if (!fits()) {
    num_alloc_retries++;
    release_cached_segments();
    if (!fits()) raise_oom(b->size);
  }
  reserved_bytes.add(b->small, int64_t(b->size));
  segment.add(b->small, 1);
  count_block(b, +1);
  adopted[b->ptr] = b;
  b->adopted = true;
  memory_history_record(device, MemAction::SegmentAlloc, uint64_t(b->ptr), int64_t(b->size),
                        context);
}

void DeviceAllocator::release_adopted_locked(Block* b) {
  count_block(b, -1);
  reserved_bytes.add(b->small, -int64_t(b->size));
  segment.add(b->small, -1);
  adopted.erase(b->ptr);
  memory_history_record(device, MemAction::SegmentFree, uint64_t(b->ptr), int64_t(b->size),
                        context);
}

void DeviceAllocator::free_locked(Block* b, bool counted) {
  bool small = b->small;
  if (counted) count_block(b, -1);
  b->allocated = false;
  b->adopted = false;
  auto merge = [&](Block* dst, Block* src) {  // src is a free neighbour of dst; absorb it
    pool_erase(src);
    inactive_split.add(small, -1);
    inactive_split_bytes.add(small, -int64_t(src->size));
    if (src == dst->prev) {
      dst->ptr = src->ptr;
      dst->prev = src->prev;
      if (dst->prev)
        dst->prev->next = dst;
      else
        segment_first[dst->ptr] = dst;  // dst now starts the segment
    } else {
      dst->next = src->next;
      if (dst->next) dst->next->prev = dst;
    }
    dst->size += src->size;
    delete_block_object(src);
  };
  if (b->prev && !b->prev->allocated) merge(b, b->prev);
  if (b->next && !b->next->allocated) merge(b, b->next);
  if (b->prev || b->next) {
    inactive_split.add(small, 1);
    inactive_split_bytes.add(small, int64_t(b->size));
  }
  pool_insert(b);
}

// Two pools per device (memory, host workspace), created on first use and never destroyed;
// lookups are lock-free.
std::atomic<DeviceAllocator*> g_allocators[kMaxDevices];

namespace {

std::atomic<DeviceAllocator*> g_workspaces[kMaxDevices];
std::mutex& g_allocators_mu = *new std::mutex;

DeviceAllocator& get_pool(std::atomic<DeviceAllocator*>* table, int device, bool workspace) {
  if (C10_LIKELY(device >= 0 && device < kMaxDevices)) {
    if (DeviceAllocator* a = table[device].load(std::memory_order_acquire)) return *a;
  }
  check_device_index(device);
  std::lock_guard<std::mutex> g(g_allocators_mu);
  if (!table[device].load()) {
    auto* a = new DeviceAllocator();
    a->device = device;
    a->workspace = workspace;
    table[device].store(a, std::memory_order_release);
  }
  return *table[device].load();
}

}  // namespace

DeviceAllocator& get(int device) { return get_pool(g_allocators, device, false); }
DeviceAllocator& get_ws(int device) { return get_pool(g_workspaces, device, true); }

// Memory-profiling and history bookkeeping of one allocation (+) or free (-) of `b`.
void report_block(DeviceAllocator& a, char* ptr, size_t size, bool alloc,
                  const std::shared_ptr<c10::GatheredContext>& ctx) {
  if (memory_history_enabled()) {
    if (alloc) {
      memory_history_record(a.device, MemAction::Alloc, uint64_t(ptr), int64_t(size), ctx);
    } else {
      memory_history_record(a.device, MemAction::FreeRequested, uint64_t(ptr), int64_t(size), ctx);
      memory_history_record(a.device, MemAction::FreeCompleted, uint64_t(ptr), int64_t(size), ctx);
    }
  }
  if (C10_UNLIKELY(c10::memoryProfilingEnabled())) {  // torch.profiler(profile_memory=True)
    int64_t allocated, reserved;
    {
      std::lock_guard<std::mutex> g(a.mu);
      allocated = a.allocated_bytes.s[kAll].current;
      reserved = a.reserved_bytes.s[kAll].current;
    }
    c10::reportMemoryUsageToProfiler(ptr, alloc ? int64_t(size) : -int64_t(size), size_t(allocated),
                                     size_t(reserved), c10::Device(kNeuron, a.device));
  }
}

// Returns a block to its pool, with the history and profiler bookkeeping (device memory only:
// host workspace is not device memory).
void free_block(Block* b) {
  if (b->workspace) {
    auto& w = get_ws(b->device);
    bool counted = true;
    if (b->adopted) {  // device memory until now
      auto& a = get(b->device);
      auto ctx = memory_history_context(/*at_free=*/true);
      const bool observed = memory_history_enabled() || c10::memoryProfilingEnabled();
      if (observed) report_block(a, b->ptr, b->size, /*alloc=*/false, ctx);
      std::lock_guard<std::mutex> g(a.mu);
      a.context = ctx;
      a.release_adopted_locked(b);
      a.context = nullptr;
      counted = false;
    }
    std::lock_guard<std::mutex> g(w.mu);
    w.free_locked(b, counted);
    return;
  }
  auto& a = get(b->device);
  auto ctx = memory_history_context(/*at_free=*/true);
  const bool observed = memory_history_enabled() || c10::memoryProfilingEnabled();
  char* ptr = b->ptr;  // read before the pool may merge `b` into a neighbour
  const size_t size = b->size;
  {
    std::lock_guard<std::mutex> g(a.mu);
    a.context = ctx;
    a.free_locked(b);
    a.context = nullptr;
  }
  if (observed) report_block(a, ptr, size, /*alloc=*/false, ctx);
}

// The deleter of device memory: the DataPtr's context is its Block.
void delete_device_block(void* ctx) noexcept {
  Block* b = static_cast<Block*>(ctx);
  if (b->owners.fetch_sub(1, std::memory_order_acq_rel) > 1) return;  // a co-owner remains
  // b->ptr read first, for the message: a failed free may have merged `b` already
  release_or_report(b->ptr, [b] { free_block(b); });
}

namespace {

// Device memory. Its DataPtrs' context is the Block, not the data pointer, so c10's
// raw_allocate() (which asserts context == data) does not apply to this allocator (nothing in
// PyTorch calls it for a PrivateUse1 device; raw allocations of the CPU kernels go through the
// CPU allocator, routed to the host workspace: host_workspace.cpp), and neither does copy-on-write
// storage: torch._lazy_clone of a neuron tensor copies at once (eager/native_ops.cpp).
struct NeuronAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t n) override {
    int dev = current_device();
    return allocate_on(dev, n, c10::Device(kNeuron, dev));
  }
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
};

NeuronAllocator g_neuron_allocator;

}  // namespace
}  // namespace alloc

using namespace alloc;

c10::Allocator* neuron_allocator() { return &g_neuron_allocator; }

c10::DataPtr allocate_on(int device, size_t nbytes, c10::Device label) {
  lazy_init();
  auto& a = get(device);
  if (nbytes == 0) return c10::DataPtr(nullptr, label);
  auto ctx = memory_history_context(/*at_free=*/false);
  Block* b = a.allocate(nbytes, ctx);
  b->owners.store(1, std::memory_order_relaxed);  // the storage this DataPtr goes to
  if (C10_UNLIKELY(memory_history_enabled() || c10::memoryProfilingEnabled())) {
    report_block(a, b->ptr, b->size, /*alloc=*/true, ctx);
  }
  return c10::DataPtr(b->ptr, b, &delete_device_block, label);
}

bool is_device_memory(const c10::DataPtr& dp) { return dp.get_deleter() == &delete_device_block; }

c10::DataPtr share_device_memory(const c10::DataPtr& dp, c10::Device label) {
  Block* b = static_cast<Block*>(dp.get_context());
  b->owners.fetch_add(1, std::memory_order_relaxed);
  return c10::DataPtr(dp.get(), b, &delete_device_block, label);
}

int device_of_ptr(const void* ptr) {
  const char* p = static_cast<const char*>(ptr);
  for (int d = 0; d < device_count() && d < kMaxDevices; ++d) {
    DeviceAllocator* a = g_allocators[d].load(std::memory_order_acquire);
    if (!a) continue;
    std::lock_guard<std::mutex> g(a->mu);
    auto it = a->segment_first.upper_bound(const_cast<char*>(p));
    if (it != a->segment_first.begin()) {
      --it;
      size_t total = 0;
      for (Block* b = it->second; b; b = b->next) total += b->size;
      if (p < it->first + total) return d;
    }
    auto ad = a->adopted.upper_bound(const_cast<char*>(p));
    if (ad != a->adopted.begin()) {
      --ad;
      if (p < ad->first + ad->second->size) return d;
    }
  }
  return -1;
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
