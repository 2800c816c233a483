// The host allocator standing in for pinned (page-locked) memory: host memory whose pointers it
// tracks, so that is_pinned() answers. Shares nothing with the caching pools; its own file
// (issue 27 split allocator.cpp by concept).
#include "runtime/allocator.h"

#include <c10/util/Exception.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_set>

namespace torch_neuronx {
namespace {

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

c10::Allocator* pinned_host_allocator() { return &g_pinned_allocator; }
bool is_pinned_ptr(const void* p) {
  std::lock_guard<std::mutex> g(g_pinned_mu);
  return g_pinned.count(p) > 0;
}

}  // namespace torch_neuronx
