// Allocation history of the neuron allocator (see memory_history.h).
#include "runtime/memory_history.h"

#include <c10/util/ApproximateClock.h>
#include <torch/csrc/profiler/combined_traceback.h>

#include <atomic>
#include <deque>
#include <map>
#include <mutex>
#include <unordered_map>

namespace torch_neuronx {
namespace {

struct History {
  std::mutex mu;
  MemoryHistoryConfig config;
  std::map<int, std::deque<MemTraceEntry>> traces;  // by device
  // Contexts of what is live now, by address (the snapshot's block and segment frames).
  std::unordered_map<uint64_t, std::shared_ptr<c10::GatheredContext>> blocks;
  std::unordered_map<uint64_t, std::shared_ptr<c10::GatheredContext>> segments;
};

History& history() {
  static History* h = new History;  // leaked: the allocator may free during shutdown
  return *h;
}

std::atomic<bool> g_enabled{false};
std::atomic<bool> g_alloc_stacks{false};
std::atomic<bool> g_free_stacks{false};
std::atomic<bool> g_cpp_stacks{false};

}  // namespace

const char* mem_action_name(MemAction a) {
  switch (a) {
    case MemAction::Alloc:
      return "alloc";
    case MemAction::FreeRequested:
      return "free_requested";
    case MemAction::FreeCompleted:
      return "free_completed";
    case MemAction::SegmentAlloc:
      return "segment_alloc";
    case MemAction::SegmentFree:
      return "segment_free";
    case MemAction::Oom:
      return "oom";
    case MemAction::Snapshot:
      return "snapshot";
  }
  return "unknown";
}

void set_memory_history(const MemoryHistoryConfig& config, bool clear) {
  auto& h = history();
  std::lock_guard<std::mutex> g(h.mu);
  h.config = config;
  if (clear || !config.enabled) {
    h.traces.clear();
  }
  if (!config.enabled) {
    h.blocks.clear();
    h.segments.clear();
  }
  g_alloc_stacks.store(config.enabled && config.alloc_stacks, std::memory_order_relaxed);
  g_free_stacks.store(config.enabled && config.free_stacks, std::memory_order_relaxed);
  g_cpp_stacks.store(config.cpp_stacks, std::memory_order_relaxed);
  g_enabled.store(config.enabled, std::memory_order_release);
}

MemoryHistoryConfig memory_history_config() {
  auto& h = history();
  std::lock_guard<std::mutex> g(h.mu);
  return h.config;
}

bool memory_history_enabled() { return g_enabled.load(std::memory_order_relaxed); }

std::shared_ptr<c10::GatheredContext> memory_history_context(bool at_free) {
  if (!g_enabled.load(std::memory_order_relaxed)) return nullptr;
  if (!(at_free ? g_free_stacks : g_alloc_stacks).load(std::memory_order_relaxed)) return nullptr;
  return torch::CapturedTraceback::gather(/*python=*/true, /*script=*/true,
                                          /*cpp=*/g_cpp_stacks.load(std::memory_order_relaxed));
}

void memory_history_record(int device, MemAction action, uint64_t addr, int64_t size,
                           const std::shared_ptr<c10::GatheredContext>& context,
                           int64_t device_free) {
  if (!g_enabled.load(std::memory_order_relaxed)) return;
  const int64_t now_us = c10::getTime() / 1000;
  auto& h = history();
  std::lock_guard<std::mutex> g(h.mu);
  if (!h.config.enabled) return;
  switch (action) {
    case MemAction::Alloc:
      h.blocks[addr] = context;
      break;
    case MemAction::FreeCompleted:
      h.blocks.erase(addr);
      break;
    case MemAction::SegmentAlloc:
      h.segments[addr] = context;
      break;
    case MemAction::SegmentFree:
      h.segments.erase(addr);
      break;
    default:
      break;
  }
  if (!h.config.record_trace || (h.config.skip_actions & (1u << unsigned(action)))) return;
  auto& trace = h.traces[device];
  trace.push_back(MemTraceEntry{action, addr, size, now_us, device_free, context});
  while (trace.size() > h.config.max_entries) trace.pop_front();
}

std::shared_ptr<c10::GatheredContext> memory_history_block_context(uint64_t addr) {
  auto& h = history();
  std::lock_guard<std::mutex> g(h.mu);
  auto it = h.blocks.find(addr);
  return it == h.blocks.end() ? nullptr : it->second;
}

std::shared_ptr<c10::GatheredContext> memory_history_segment_context(uint64_t addr) {
  auto& h = history();
  std::lock_guard<std::mutex> g(h.mu);
  auto it = h.segments.find(addr);
  return it == h.segments.end() ? nullptr : it->second;
}

std::vector<std::vector<MemTraceEntry>> memory_history_traces(int device_count) {
  std::vector<std::vector<MemTraceEntry>> out(std::max(device_count, 0));
  auto& h = history();
  std::lock_guard<std::mutex> g(h.mu);
  for (auto& [device, trace] : h.traces) {
    if (device >= 0 && device < device_count) out[device].assign(trace.begin(), trace.end());
  }
  return out;
}

}  // namespace torch_neuronx
