// Per-operator state of the eager backend: the facts the op policy table
// (torch_neuronx/eager/op_policy.py) pushes once at import (native / fallback / unsupported,
// mixed devices, data movement), execution tracking, and the kernel plan cache with its
// counters.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace torch_neuronx {

enum class OpStatus : uint8_t { Native = 0, Fallback = 1, Unsupported = 2 };

// What the policy table says about one op; ops it does not name get the defaults.
struct OpFacts {
  OpStatus status = OpStatus::Native;
  std::string reason;
  bool mixed_device_ok = false;  // copies/indexing accept CPU tensors beside neuron ones
  bool data_movement = false;    // float64 stays float64 (copies, views, fills)
};

struct OpEntry {
  std::string name;      // "aten::linalg_qr" (no overload), the name users see
  std::string overload;  // "Tensor" for aten::add.Tensor; policy entries may name it
  OpFacts facts;
  bool random = false;     // tagged nondeterministic_seeded
  int generator_arg = -1;  // index of a Generator? argument, if any
  std::atomic<bool> executed{false};
  std::atomic<bool> fell_back{false};
  std::atomic<bool> warned{false};
};

// The entry for `op`, created on first use (policy lookup happens once per op).
OpEntry& op_entry(const c10::OperatorHandle& op);

// One row per op name ("aten::add", or "aten::add.Tensor" for an overload): name, status code
// (OpStatus), reason, mixed_device_ok, data_movement. Replaces the whole table.
using PolicyRow = std::tuple<std::string, int, std::string, bool, bool>;
void set_op_policy(const std::vector<PolicyRow>& table);
void set_strict(bool strict);
bool strict();

// Ops that a fast-path kernel (fast_*.cpp) dispatches itself on neuron tensors (a reduction
// filling its output, say) are its implementation, which the generic path runs on host aliases
// unseen: while paused, the calling thread's ops are neither tracked nor counted in the plan
// cache's counters.
struct PauseTracking {
  PauseTracking();
  ~PauseTracking();
};
bool tracking_paused();

std::vector<std::string> executed_ops();
std::vector<std::string> fallback_ops();
void clear_op_tracking();

// Kernel plan cache: a plan is decided once per (op, argument signature) and reused.
struct Plan {
  bool round_f32 = false;  // 64-bit float inputs/results at float32 precision (dtype policy)
};
// Looks up (or builds, timing the build) the plan for `op` with the arguments on `stack`.
// Returned by value: another thread may evict the cache's entry while the op runs.
Plan plan_for(OpEntry& e, const c10::OperatorHandle& op, const torch::jit::Stack& stack,
              size_t nargs);
// The same for arguments held elsewhere: same key, same counters.
Plan plan_for_args(OpEntry& e, const c10::OperatorHandle& op, const c10::IValue* args,
                   size_t nargs);
// The two halves of a lookup, for callers that compute the key themselves (the unboxed fast
// path, fast_*.cpp, with eager/plan_key.h): the cached plan for `key` (one hit counted), or
// nullptr; then, on a miss, the plan built from the boxed arguments (one miss counted).
// cached_plan's pointer is valid until the calling thread's next lookup.
const Plan* cached_plan(uint64_t key);
Plan build_plan(OpEntry& e, const c10::OperatorHandle& op, uint64_t key, const c10::IValue* args,
                size_t nargs);

// Most plans kept (0: unbounded); the cache is emptied when full. Set once at configure time.
void set_plan_cache_max_entries(size_t n);

std::map<std::string, int64_t> counters();
void clear_counters();
void bump(const char* counter, int64_t by);

}  // namespace torch_neuronx
