// The allocator's statistics (torch.cuda.memory_stats() names), segment snapshots and
// empty_cache: readers and maintenance of the pools, off the allocation path. Their own file
// (issue 27 split allocator.cpp by concept): they change with what is reported, not with how
// memory is served.
#include "runtime/allocator_pool.h"

#include "runtime/memory_history.h"
#include "runtime/runtime.h"

#include <string>

namespace torch_neuronx {

using namespace alloc;

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

}  // namespace torch_neuronx
