// The allocator's shared internals (runtime/allocator.h is its interface): the caching pool
// (DeviceAllocator), its blocks, free-block structures and statistics. Private to the files
// that implement allocator.h, one concept each (issue 27: one compile job per file, and a change
// to one recompiles only it):
//   caching_allocator.cpp      the pool's algorithm (best fit, splitting, merging, segments,
//                              out of memory), device memory: allocation, its deleter, the
//                              PrivateUse1 allocator
//   host_workspace.cpp         host workspace of the CPU kernels, adoption of their outputs as
//                              device memory, the routing CPU allocator
//   pinned_host_allocator.cpp  the pinned-memory stand-in
//   allocator_stats.cpp        statistics, segment snapshots, empty_cache
#pragma once

#include "runtime/allocator.h"

#include <c10/core/Allocator.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <set>
#include <utility>

#define TORCH_NEURONX_LOCAL_TLS __attribute__((tls_model("local-dynamic")))

namespace torch_neuronx {
namespace alloc {

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
  // the thread exits. The variables are the driver's own (hidden), so the local-dynamic TLS
  // model applies: without the attribute, this template's thread-locals (shared by the
  // allocator's files) would get the general-dynamic model, one __tls_get_addr call per access.
  static Chunk*& head() {
    static thread_local Chunk* h TORCH_NEURONX_LOCAL_TLS = nullptr;
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
    static thread_local Release r TORCH_NEURONX_LOCAL_TLS;
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
  // Owners of an allocated device block's memory: the neuron storage, plus the host aliases
  // that read it (host_alias.cpp). They co-own the memory, not the neuron StorageImpl, so a
  // neuron tensor stays the sole owner of its storage as a CPU tensor is (PyTorch reads
  // `storage().use_count() == 1`, e.g. to accumulate a gradient in place). The block goes
  // back to its pool when the last owner lets go (delete_device_block).
  std::atomic<int> owners{0};
};

inline Block* new_block(int device, bool small) {
  return new (ChunkFreeList<sizeof(Block)>::get()) Block{device, small};
}
inline void delete_block_object(Block* b) noexcept {
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

inline size_t round_size(size_t n) {
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

  bool release_cached_segments();
  [[noreturn]] void raise_oom(size_t requested);
  Block* new_segment(size_t rounded, bool small);
  Block* allocate(size_t nbytes, const std::shared_ptr<c10::GatheredContext>& ctx);
  // Device pool: counts workspace block `b` as device memory, a segment of exactly its size
  // (caller holds `mu`). Raises the device's out-of-memory error when it does not fit.
  void adopt_locked(Block* b);
  // Device pool: the adopted block `b` is being freed (caller holds `mu`).
  void release_adopted_locked(Block* b);
  // `counted` false: the block's use was already taken off this pool's statistics (an
  // adopted workspace block, counted by its device while adopted).
  void free_locked(Block* b, bool counted = true);

  // Counts `b` (an allocated block) as in use (+1) or no longer in use (-1).
  void count_block(const Block* b, int sign) {
    allocated_bytes.add(b->small, sign * int64_t(b->size));
    requested_bytes.add(b->small, sign * int64_t(b->requested));
    allocation.add(b->small, sign);
  }
};

// The pool of `device`'s memory and the pool of its host workspace (created on first use).
DeviceAllocator& get(int device);
DeviceAllocator& get_ws(int device);
// The device pools created so far, by device (nullptr: not yet used); lock-free lookups.
constexpr int kMaxDevices = 1024;
extern std::atomic<DeviceAllocator*> g_allocators[kMaxDevices];

// Returns a block to its pool, with the history and profiler bookkeeping
// (caching_allocator.cpp).
void free_block(Block* b);
// Memory-profiling and history bookkeeping of one allocation (+) or free (-) of device memory.
void report_block(DeviceAllocator& a, char* ptr, size_t size, bool alloc,
                  const std::shared_ptr<c10::GatheredContext>& ctx);
// The deleters: device memory (context: the Block) and host workspace (context: the pointer;
// host_workspace.cpp).
void delete_device_block(void* ctx) noexcept;
void delete_block(void* ptr) noexcept;

// A deleter runs inside destructors (noexcept): an error escaping it would terminate the
// process. Every failure is caught here, reported on stderr, and the memory is leaked.
inline void deleter_fault(const void* ptr, const char* what) noexcept {
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

}  // namespace alloc
}  // namespace torch_neuronx
