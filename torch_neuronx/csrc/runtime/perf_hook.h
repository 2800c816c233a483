// The performance model's hook in the driver (issue 10): while somebody measures
// (torch_neuronx.perf turns the switch on), the device work the driver runs -- eager ops
// (eager/kernel.cpp), copies (eager/native_ops.cpp) and collectives
// (distributed/collectives.cpp) -- is reported to a Python callback registered by
// torch_neuronx/eager/perf_hook.py, which costs it on the device clock. While nobody measures,
// each of those paths pays one relaxed atomic load.
#pragma once

#include <ATen/core/ivalue.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace torch_neuronx {

extern std::atomic<bool> g_perf_enabled;

// A build with -DTORCH_NEURONX_NO_PERF_HOOK compiles the hook out (the compiler drops every
// branch behind it): benchmarks/callgrind_eager.py --baseline-so compares such a build with
// the real one to count what the hook costs while nobody measures (BENCHMARKS.md).
#ifdef TORCH_NEURONX_NO_PERF_HOOK
constexpr bool perf_enabled() { return false; }
#else
inline bool perf_enabled() { return g_perf_enabled.load(std::memory_order_relaxed); }
#endif

void set_perf_enabled(bool on);

// The callback: callable(op_name, device_index, args, outputs, host_ns, fallback). `args` are
// the op's arguments as the caller passed them (neuron tensors, scalars, lists), `outputs` its
// results; `host_ns` is the wall time of the host kernel (used for CPU-fallback ops only).
// Passing None unregisters it.
void set_perf_callback_object(void* py_callable);

// Reports one op (called with the GIL released or held; takes it). Errors raised by the
// callback become a c10::Error naming the op.
void report_op(const std::string& op_name, int device, const std::vector<c10::IValue>& args,
               const c10::IValue* outputs, size_t n_outputs, int64_t host_ns, bool fallback);

// Monotonic nanoseconds (for host kernel times).
int64_t perf_now_ns();

}  // namespace torch_neuronx
