#include "runtime/allocator.h"

#include "runtime/log.h"
#include "runtime/memory_history.h"
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
#include <new>
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

// Fixed-size chunks recycled through a per-thread free list. Every tensor allocation and free
// creates or destroys a few bookkeeping nodes (a free-pool set node, a split Block, for host
// workspace a live-map node); through glibc's malloc/free each costs a few hundred instructions,
// here a few. A chunk freed on another thread joins that thread's list. A list only grows to the
// largest number of nodes its thread freed and did not reuse; it is returned when the thread exits.
template <size_t Size>
struct ChunkFreeList {
  struct Chunk {
    Chunk* next;
  };
  static_assert(Size >= sizeof(Chunk), "a chunk holds at least the free-list link");
  // The list head is a plain thread-local (no construction guard on the hot path); the
  // thread's first use of an empty list also registers Release, which returns the list when
  // the thread exits.
  static Chunk*& head() {
    static thread_local Chunk* h = nullptr;
    return h;
  }
  struct Release {
    ~Release() {
      Chunk*& h = head();
      while (Chunk* c = h) {
        h = c->next;
        ::operator delete(c);
      }
    }
  };
  static void release_at_thread_exit() {
    static thread_local Release r;
    (void)r;
  }
  static void* get() {
    Chunk*& h = head();
    if (Chunk* c = h) {
      h = c->next;
      return c;
    }
    release_at_thread_exit();
    return ::operator new(Size);
  }
  static void put(void* p) noexcept {
    Chunk*& h = head();
    if (C10_UNLIKELY(h == nullptr)) release_at_thread_exit();
    auto* c = static_cast<Chunk*>(p);
    c->next = h;
    h = c;
  }
};

// A standard allocator over ChunkFreeList for node-based containers (single-node requests;
// arrays, such as a hash table's buckets, use operator new).
template <class T>
struct PooledAllocator {
  using value_type = T;
  PooledAllocator() noexcept = default;
  template <class U>
  PooledAllocator(const PooledAllocator<U>&) noexcept {}
  T* allocate(size_t n) {
    if (n == 1) return static_cast<T*>(ChunkFreeList<sizeof(T)>::get());
    return static_cast<T*>(::operator new(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) noexcept {
    if (n == 1)
      ChunkFreeList<sizeof(T)>::put(p);
    else
      ::operator delete(p);
  }
  template <class U>
  bool operator==(const PooledAllocator<U>&) const noexcept {
    return true;
  }
  template <class U>
  bool operator!=(const PooledAllocator<U>&) const noexcept {
    return false;
  }
};

struct Block {
  int device;
  bool small;
  bool allocated = false;
  bool workspace = false;  // lives in the device's host-workspace pool (see DeviceAllocator)
  bool adopted = false;    // a workspace block adopted as device memory (a kernel's output)
  size_t size;
  size_t requested = 0;
  char* ptr;
  Block* prev = nullptr;  // address-order neighbours within the segment
  Block* next = nullptr;
  Block* bin_prev = nullptr;  // list links of SizeBins (free small-pool blocks only)
  Block* bin_next = nullptr;
};

Block* new_block(int device, bool small) {
  return new (ChunkFreeList<sizeof(Block)>::get()) Block{device, small};
}
void delete_block_object(Block* b) noexcept {
  b->~Block();
  ChunkFreeList<sizeof(Block)>::put(b);
}

struct BlockLess {
  bool operator()(const Block* a, const Block* b) const {
    return a->size != b->size ? a->size < b->size : a->ptr < b->ptr;
  }
};

// Free blocks of the large pool, best fit first: smallest size, then lowest address.
struct SizeOrdered {
  std::set<Block*, BlockLess, PooledAllocator<Block*>> blocks;
  void insert(Block* b) { blocks.insert(b); }
  void erase(Block* b) { blocks.erase(b); }
  Block* best_fit(size_t size) const {  // the block to serve `size` bytes from, or nullptr
    Block key{0, false};
    key.size = size;
    key.ptr = nullptr;
    auto it = blocks.lower_bound(&key);
    return it == blocks.end() ? nullptr : *it;
  }
  template <typename F>
  void for_each(F&& f) {  // f may erase the block it is given
    for (auto it = blocks.begin(); it != blocks.end();) f(*it++);
  }
};

// Free blocks of the small pool, where sizes are multiples of kMinBlock up to a small segment:
// one list per size and a bitmap of the non-empty lists, so that the best fit (the smallest
// size that serves a request) is a bit scan and inserting or removing a block is a few
// pointer writes, instead of a balanced tree's rebalancing (this pool serves nearly every
// tensor of a training step). Among free blocks of one size the most recently freed is
// served first: its memory is the likeliest to be in the host's caches still.
struct SizeBins {
  static constexpr size_t kBins = kSmallSegment / kMinBlock + 1;  // bin i: size i * kMinBlock
  static constexpr size_t kWords = (kBins + 63) / 64;
  static constexpr size_t kSummaryWords = (kWords + 63) / 64;
  std::array<Block*, kBins> head{};
  std::array<uint64_t, kWords> nonempty{};        // bit i: head[i] is a list
  std::array<uint64_t, kSummaryWords> summary{};  // bit w: nonempty[w] != 0

  static size_t bin(size_t size) { return size / kMinBlock; }
  void insert(Block* b) {
    const size_t i = bin(b->size);
    TORCH_INTERNAL_ASSERT(i < kBins && b->size % kMinBlock == 0, "small-pool block of ", b->size,
                          " bytes");
    b->bin_prev = nullptr;
    b->bin_next = head[i];
    if (head[i]) {
      head[i]->bin_prev = b;
    } else {
      nonempty[i / 64] |= uint64_t(1) << (i % 64);
      summary[i / 4096] |= uint64_t(1) << (i / 64 % 64);
    }
    head[i] = b;
  }
  void erase(Block* b) {
    const size_t i = bin(b->size);
    if (b->bin_next) b->bin_next->bin_prev = b->bin_prev;
    if (b->bin_prev) {
      b->bin_prev->bin_next = b->bin_next;
    } else {
      head[i] = b->bin_next;
      if (!head[i]) {
        nonempty[i / 64] &= ~(uint64_t(1) << (i % 64));
        if (!nonempty[i / 64]) summary[i / 4096] &= ~(uint64_t(1) << (i / 64 % 64));
      }
    }
    b->bin_prev = b->bin_next = nullptr;
  }
  Block* best_fit(size_t size) const {
    const size_t i = bin(size + kMinBlock - 1);
    if (i >= kBins) return nullptr;
    size_t w = i / 64;
    uint64_t bits = nonempty[w] & (~uint64_t(0) << (i % 64));
    if (!bits) {  // the next non-empty word, from the summary
      w = next_word(w + 1);
      if (w >= kWords) return nullptr;
      bits = nonempty[w];
    }
    return head[w * 64 + size_t(__builtin_ctzll(bits))];
  }
  template <typename F>
  void for_each(F&& f) {  // f may erase the block it is given
    for (size_t w = next_word(0); w < kWords; w = next_word(w + 1)) {
      for (uint64_t bits = nonempty[w]; bits; bits &= bits - 1) {
        for (Block* b = head[w * 64 + size_t(__builtin_ctzll(bits))]; b;) {
          Block* next = b->bin_next;
          f(b);
          b = next;
        }
      }
    }
  }

 private:
  size_t next_word(size_t w) const {  // the first non-empty word at or after w, or kWords
    for (size_t s = w / 64; s < kSummaryWords; ++s) {
      uint64_t bits = summary[s];
      if (s == w / 64) bits &= ~uint64_t(0) << (w % 64);
      if (bits) return s * 64 + size_t(__builtin_ctzll(bits));
    }
    return kWords;
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

// One caching pool. Each device has two: its memory (`workspace` false: the emulated HBM,
// capacity enforced, torch.cuda's statistics), and the host workspace of the CPU kernels that
// run for it (`workspace` true: host RAM, no capacity, reported as `host_workspace.*`).
// Allocations routed from a CPU kernel come from the workspace pool; the ones the kernel
// returns are adopted as device memory (`adopt_as_device_memory`): they then count against
// the device, each as a segment of exactly its block, until freed. Temporaries a kernel
// frees before returning (type-promoting copies, sort scratch, packing buffers) never do.
struct DeviceAllocator {
  int device;
  bool workspace = false;
  std::mutex mu;
  SizeBins free_small;
  SizeOrdered free_large;
  StatArray allocated_bytes, reserved_bytes, requested_bytes;
  StatArray allocation, segment, inactive_split, inactive_split_bytes;
  int64_t num_alloc_retries = 0, num_ooms = 0, num_device_alloc = 0, num_device_free = 0;
  // The first block of each segment, by segment base (memory snapshots walk from it).
  using BlockMap =
      std::map<char*, Block*, std::less<char*>, PooledAllocator<std::pair<char* const, Block*>>>;
  BlockMap segment_first;
  // Device pool only: the adopted workspace blocks (each counted as its own segment).
  BlockMap adopted;
  // The stack of the allocation or free being served (memory history; captured by the
  // caller before taking `mu`, since capturing Python frames may take the GIL).
  std::shared_ptr<c10::GatheredContext> context;

  void pool_insert(Block* b) { b->small ? free_small.insert(b) : free_large.insert(b); }
  void pool_erase(Block* b) { b->small ? free_small.erase(b) : free_large.erase(b); }

  // Every statistic with its torch.cuda name, in memory_stats() order. "active" equals
  // "allocated" here (CUDA's differ while a freed block waits for another stream's work; this
  // allocator frees at once), so the two names share one counter, updated once per call.
  std::array<std::pair<const char*, StatArray*>, 9> stats() {
    return {{{"allocated_bytes", &allocated_bytes},
             {"reserved_bytes", &reserved_bytes},
             {"active_bytes", &allocated_bytes},
             {"requested_bytes", &requested_bytes},
             {"allocation", &allocation},
             {"segment", &segment},
             {"active", &allocation},
             {"inactive_split", &inactive_split},
             {"inactive_split_bytes", &inactive_split_bytes}}};
  }

  bool release_cached_segments() {
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

  [[noreturn]] void raise_oom(size_t requested) {
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

  Block* new_segment(size_t rounded, bool small) {
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
      memory_history_record(device, MemAction::SegmentAlloc, uint64_t(b->ptr), int64_t(seg),
                            context);
    if (log_enabled(kLogDebug)) {
      log_message(kLogDebug, "torch_neuronx.runtime",
                  "neuron:" + std::to_string(device) + " reserved a " +
                      (small ? "small" : "large") + "-pool segment of " + std::to_string(seg) +
                      " bytes");
    }
    return b;
  }

  Block* allocate(size_t nbytes, const std::shared_ptr<c10::GatheredContext>& ctx) {
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

  // Device pool: counts workspace block `b` as device memory, a segment of exactly its size
  // (caller holds `mu`). Raises the device's out-of-memory error when it does not fit.
  void adopt_locked(Block* b) {
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

  // Device pool: the adopted block `b` is being freed (caller holds `mu`).
  void release_adopted_locked(Block* b) {
    count_block(b, -1);
    reserved_bytes.add(b->small, -int64_t(b->size));
    segment.add(b->small, -1);
    adopted.erase(b->ptr);
    memory_history_record(device, MemAction::SegmentFree, uint64_t(b->ptr), int64_t(b->size),
                          context);
  }

  // Counts `b` (an allocated block) as in use (+1) or no longer in use (-1).
  void count_block(const Block* b, int sign) {
    allocated_bytes.add(b->small, sign * int64_t(b->size));
    requested_bytes.add(b->small, sign * int64_t(b->requested));
    allocation.add(b->small, sign);
  }

  // `counted` false: the block's use was already taken off this pool's statistics (an
  // adopted workspace block, counted by its device while adopted).
  void free_locked(Block* b, bool counted = true) {
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
};

// Two pools per device (memory, host workspace), created on first use and never destroyed;
// lookups are lock-free.
constexpr int kMaxDevices = 1024;
std::atomic<DeviceAllocator*> g_allocators[kMaxDevices];
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
DeviceAllocator& get(int device) { return get_pool(g_allocators, device, false); }
DeviceAllocator& get_ws(int device) { return get_pool(g_workspaces, device, true); }

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

// A deleter runs inside destructors (noexcept): an error escaping it would terminate the
// process. Every failure is caught here, reported on stderr, and the memory is leaked.
void deleter_fault(const void* ptr, const char* what) noexcept {
  std::fprintf(
      stderr, "torch_neuronx: error while freeing neuron memory at %p (the memory is leaked): %s\n",
      ptr, what);
}

// Runs a deleter's work `release` for the memory at `ptr`, reporting any failure.
template <typename Release>
void release_or_report(const void* ptr, Release&& release) noexcept {
  try {
    release();
  } catch (const std::exception& err) {
    deleter_fault(ptr, err.what());
  } catch (...) {
    deleter_fault(ptr, "unknown error");
  }
}

void delete_block(void* ptr) noexcept {
  release_or_report(ptr, [ptr] {
    Block* b = take_block(ptr);
    if (!b) return deleter_fault(ptr, "the pointer was not allocated by the neuron allocator");
    free_block(b);
  });
}

// The deleter of device memory: the DataPtr's context is its Block.
void delete_device_block(void* ctx) noexcept {
  Block* b = static_cast<Block*>(ctx);
  // b->ptr read first, for the message: a failed free may have merged `b` already
  release_or_report(b->ptr, [b] { free_block(b); });
}

// Device memory. Its DataPtrs' context is the Block, not the data pointer, so c10's
// raw_allocate() (which asserts context == data) does not apply to this allocator (nothing in
// PyTorch calls it for a PrivateUse1 device; raw allocations of the CPU kernels go through the
// CPU allocator, routed to the host workspace above), and neither does copy-on-write storage:
// torch._lazy_clone of a neuron tensor copies at once (eager/native_ops.cpp).
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
NeuronAllocator g_neuron_allocator;

std::mutex& g_pinned_mu = *new std::mutex;
std::unordered_set<const void*>& g_pinned = *new std::unordered_set<const void*>;
void delete_pinned(void* p) noexcept {
  try {
    std::lock_guard<std::mutex> g(g_pinned_mu);
    g_pinned.erase(p);
  } catch (...) {
    // std::mutex::lock failing: still free the memory; is_pinned_ptr may then keep a stale entry
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
  auto ctx = memory_history_context(/*at_free=*/false);
  Block* b = a.allocate(nbytes, ctx);
  if (C10_UNLIKELY(memory_history_enabled() || c10::memoryProfilingEnabled())) {
    report_block(a, b->ptr, b->size, /*alloc=*/true, ctx);
  }
  return c10::DataPtr(b->ptr, b, &delete_device_block, label);
}

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

void debug_free_unknown_pointer() {
  static char not_ours[64];
  c10::DataPtr dp(not_ours, not_ours, &delete_block, c10::Device(kNeuron, 0));
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
  {
    // Host workspace of the kernels that ran for this device (not device memory).
    auto& w = get_ws(device);
    std::lock_guard<std::mutex> gw(w.mu);
    const std::array<std::pair<const char*, StatArray*>, 3> ws_stats{
        {{"allocated_bytes", &w.allocated_bytes},
         {"reserved_bytes", &w.reserved_bytes},
         {"allocation", &w.allocation}}};
    for (auto [name, arr] : ws_stats) {
      const Stat& st = arr->s[kAll];
      std::string base = std::string("host_workspace.") + name + ".";
      out[base + "current"] = st.current;
      out[base + "peak"] = st.peak;
      out[base + "allocated"] = st.allocated;
      out[base + "freed"] = st.freed;
    }
  }
  out["num_alloc_retries"] = a.num_alloc_retries;
  out["num_ooms"] = a.num_ooms;
  out["num_device_alloc"] = a.num_device_alloc;
  out["num_device_free"] = a.num_device_free;
  out["num_sync_all_streams"] = 0;
  out["max_split_size"] = -1;
  return out;
}

void reset_peak_stats(int device) {
  for (DeviceAllocator* a : {&get(device), &get_ws(device)}) {
    std::lock_guard<std::mutex> g(a->mu);
    for (auto [name, arr] : a->stats())
      for (auto& s : arr->s) s.reset_peak();
  }
}

void reset_accumulated_stats(int device) {
  for (DeviceAllocator* a : {&get(device), &get_ws(device)}) {
    std::lock_guard<std::mutex> g(a->mu);
    for (auto [name, arr] : a->stats())
      for (auto& s : arr->s) s.reset_accumulated();
    a->num_alloc_retries = a->num_ooms = a->num_device_alloc = a->num_device_free = 0;
  }
}

void empty_cache(int device) {
  if (device < 0) {
    for (int d = 0; d < device_count(); ++d) empty_cache(d);
    return;
  }
  auto& a = get(device);
  auto ctx = memory_history_context(/*at_free=*/true);
  {
    std::lock_guard<std::mutex> g(a.mu);
    a.context = ctx;
    a.release_cached_segments();
    a.context = nullptr;
  }
  auto& w = get_ws(device);
  std::lock_guard<std::mutex> g(w.mu);
  w.release_cached_segments();
}

std::vector<SegmentInfo> segment_infos(int device) {
  auto& a = get(device);
  std::vector<SegmentInfo> out;
  std::lock_guard<std::mutex> g(a.mu);
  for (auto& [base, first] : a.segment_first) {
    SegmentInfo s{device, uint64_t(base), 0, first->small, {}};
    for (Block* b = first; b; b = b->next) {
      s.blocks.push_back({uint64_t(b->ptr), int64_t(b->size), int64_t(b->requested), b->allocated});
      s.total_size += int64_t(b->size);
    }
    out.push_back(std::move(s));
  }
  for (auto& [base, b] : a.adopted) {  // each adopted kernel output is a segment of its own
    out.push_back({device,
                   uint64_t(base),
                   int64_t(b->size),
                   b->small,
                   {{uint64_t(base), int64_t(b->size), int64_t(b->requested), true}}});
  }
  std::sort(out.begin(), out.end(),
            [](const SegmentInfo& x, const SegmentInfo& y) { return x.address < y.address; });
  return out;
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
