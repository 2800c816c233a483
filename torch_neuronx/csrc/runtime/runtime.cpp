#include "runtime/runtime.h"

#include <c10/util/Exception.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <mutex>

namespace torch_neuronx {
namespace {

int g_device_count = 0;
int64_t g_capacity = 0;
std::string g_profile = "unconfigured";
std::atomic<bool> g_initialized{false};
std::atomic<bool> g_in_bad_fork{false};
std::once_flag g_atfork_once;
thread_local int t_current_device = 0;

// Runs in the child of fork(): device state (streams, allocator locks, runtime handles on
// real hardware) cannot be shared with a parent that already initialised the runtime.
void on_fork_child() {
  if (g_initialized.load()) {
    g_in_bad_fork.store(true);
  }
}

}  // namespace

void configure(int device_count, int64_t capacity_bytes, const std::string& profile) {
  // Allocators, generators and streams exist per device once the runtime is up: the topology
  // is fixed from then on (the same values again are accepted: configuring is idempotent).
  if (g_initialized.load()) {
    TORCH_CHECK(
        device_count == g_device_count && capacity_bytes == g_capacity && profile == g_profile,
        "The neuron device topology cannot change after the runtime is initialised (it "
        "has ",
        g_device_count, " device(s) of ", g_capacity, " bytes, profile '", g_profile,
        "'; asked for ", device_count, " of ", capacity_bytes, " bytes, '", profile,
        "'). Set NEURON_RT_VISIBLE_CORES / NEURON_RT_NUM_CORES / "
        "TORCH_NEURONX_HBM_PER_CORE before the first use of the device.");
    return;
  }
  TORCH_CHECK(device_count >= 0, "neuron: device count must be >= 0, got ", device_count);
  g_device_count = device_count;
  g_capacity = capacity_bytes;
  g_profile = profile;
  std::call_once(g_atfork_once, [] { pthread_atfork(nullptr, nullptr, on_fork_child); });
}

int device_count() { return g_device_count; }
int64_t device_capacity(int /*index*/) { return g_capacity; }
const std::string& profile_name() { return g_profile; }

void check_device_index(int64_t index) {
  TORCH_CHECK_INDEX(
      index >= 0 && index < g_device_count, "Invalid device index neuron:", index,
      ": the emulated instance '", g_profile, "' exposes ", g_device_count,
      " logical NeuronCore(s), so valid indices are 0..", g_device_count - 1,
      " (see NEURON_RT_VISIBLE_CORES / NEURON_RT_NUM_CORES / TORCH_NEURONX_EMULATED_INSTANCE).");
}

int current_device() { return t_current_device; }

void set_current_device(int index) {
  check_device_index(index);
  t_current_device = index;
}

void lazy_init() {
  if (C10_LIKELY(g_initialized.load(std::memory_order_relaxed))) {
    TORCH_CHECK(
        !g_in_bad_fork.load(std::memory_order_relaxed),
        "Cannot re-initialize the neuron device in a forked subprocess. The parent process had "
        "already initialised it; to use the neuron device with multiprocessing, you must use the "
        "'spawn' start method (multiprocessing.set_start_method('spawn') or "
        "torch.multiprocessing.spawn).");
    return;
  }
  TORCH_CHECK(g_device_count > 0, "No neuron devices are visible (emulated instance '", g_profile,
              "'); check NEURON_RT_VISIBLE_CORES / NEURON_RT_NUM_CORES.");
  g_initialized.store(true);
}

bool is_initialized() { return g_initialized.load(); }

bool in_bad_fork() { return g_in_bad_fork.load(); }

}  // namespace torch_neuronx
