// Allocation history of the neuron allocator, for memory snapshots in torch.cuda's format
// (torch.neuron.memory._record_memory_history / _snapshot / _dump_snapshot), so that PyTorch's
// own visualiser (torch/cuda/_memory_viz.py, pytorch.org/memory_viz) reads them.
//
// The allocator reports every allocation, free, segment reservation/release and
// out-of-memory here while recording is on; stacks are captured with PyTorch's
// CapturedTraceback (Python frames, optionally C++), exactly as the CUDA caching allocator does.
#pragma once

#include <c10/core/Allocator.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace torch_neuronx {

// torch.cuda.memory._record_memory_history's choices, decoded.
struct MemoryHistoryConfig {
  bool enabled = false;           // enabled="state" or "all"
  bool record_trace = false;      // enabled="all": keep the alloc/free event history
  bool alloc_stacks = false;      // context="state"/"alloc"/"all": stacks of allocations
  bool free_stacks = false;       // context="all": stacks of frees too
  bool cpp_stacks = false;        // stacks="all": C++ frames as well as Python ones
  size_t max_entries = SIZE_MAX;  // per device, oldest dropped first
  uint32_t skip_actions = 0;      // bit per MemAction not to record
};

enum class MemAction : uint8_t {
  Alloc = 0,
  FreeRequested,
  FreeCompleted,
  SegmentAlloc,
  SegmentFree,
  Oom,
  Snapshot,  // a snapshot was taken (correlates a snapshot with the trace)
};
const char* mem_action_name(MemAction a);

// Replaces the configuration; `clear` drops the recorded history first.
void set_memory_history(const MemoryHistoryConfig& config, bool clear);
MemoryHistoryConfig memory_history_config();

// True while recording (a relaxed load: the allocator's hot path checks it first).
bool memory_history_enabled();

// The calling thread's stack, when the configuration asks for one at an allocation
// (`at_free` false) or a free. Call it before taking allocator locks: capturing Python frames
// may take the GIL.
std::shared_ptr<c10::GatheredContext> memory_history_context(bool at_free);

// Records one allocator event of `device`.
void memory_history_record(int device, MemAction action, uint64_t addr, int64_t size,
                           const std::shared_ptr<c10::GatheredContext>& context,
                           int64_t device_free = 0);

// The allocation context of the live block / segment at `addr` (null when unknown).
std::shared_ptr<c10::GatheredContext> memory_history_block_context(uint64_t addr);
std::shared_ptr<c10::GatheredContext> memory_history_segment_context(uint64_t addr);

struct MemTraceEntry {
  MemAction action;
  uint64_t addr;
  int64_t size;
  int64_t time_us;      // Unix time, microseconds
  int64_t device_free;  // Oom only: bytes of the device's capacity not reserved
  std::shared_ptr<c10::GatheredContext> context;
};

// A copy of the recorded events, one list per device (indices 0..device_count-1).
std::vector<std::vector<MemTraceEntry>> memory_history_traces(int device_count);

}  // namespace torch_neuronx
