// Python bindings of the driver (torch_neuronx._C). Kept thin: policy, profiles and the
// user-facing API live in Python; this exposes the mechanisms.
#include "eager/fast_ops.h"
#include "eager/kernel.h"
#include "eager/op_table.h"
#include "runtime/allocator.h"
#include "runtime/generator.h"
#include "runtime/host_alias.h"
#include "runtime/perf_hook.h"
#include "runtime/runtime.h"
#include "runtime/sync.h"

#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <torch/csrc/Generator.h>
#include <torch/csrc/utils/pybind.h>

namespace torch_neuronx {
void register_c10d_kernels();                   // distributed/collectives.cpp
void bind_observability(pybind11::module_& m);  // profiler_bindings.cpp
}  // namespace torch_neuronx
namespace tn = torch_neuronx;

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "torch_neuronx driver: emulated NeuronCore memory, guard, generators, eager path";
  tn::install_routing_cpu_allocator();

  // Everything the driver needs to know before first use, read in Python (topology, env).
  m.def(
      "_configure",
      [](int device_count, int64_t capacity_bytes, const std::string& profile,
         int64_t plan_cache_max_entries) {
        tn::configure(device_count, capacity_bytes, profile);
        tn::set_plan_cache_max_entries(size_t(plan_cache_max_entries));
      },
      py::arg("device_count"), py::arg("capacity_bytes"), py::arg("profile"),
      py::arg("plan_cache_max_entries") = 0);
  m.def("_device_count", &tn::device_count);
  m.def("_check_device_index", &tn::check_device_index);
  m.def("_current_device", &tn::current_device);
  m.def("_set_device", &tn::set_current_device);
  m.def("_init", &tn::lazy_init);
  m.def("_is_initialized", &tn::is_initialized);
  m.def("_is_in_bad_fork", &tn::in_bad_fork);
  m.def(
      "_device_from_ptr",
      [](uintptr_t ptr) {
        return at::detail::getPrivateUse1Hooks().getDeviceFromPtr(reinterpret_cast<void*>(ptr));
      },
      "PrivateUse1 hooks' getDeviceFromPtr: the neuron device owning a data pointer");
  m.def("_debug_free_unknown_pointer", &tn::debug_free_unknown_pointer,
        "test hook: runs the allocator's deleter on a pointer it does not own");
  m.def("_synchronize", [](int device) { tn::synchronize_device(device); });

  m.def("_memory_stats", &tn::memory_stats);
  m.def("_reset_peak_memory_stats", &tn::reset_peak_stats);
  m.def("_reset_accumulated_memory_stats", &tn::reset_accumulated_stats);
  m.def("_empty_cache", &tn::empty_cache);

  m.def("_host_alias", &tn::host_alias,
        "CPU tensor over the same bytes as a neuron tensor (other tensors: unchanged)");
  m.def("_adopt_host_tensor", &tn::adopt_host_tensor);
  m.def("_set_alloc_route", &tn::set_alloc_route);
  m.def("_alloc_route", &tn::alloc_route);
  m.attr("_ROUTE_DEVICE_MEMORY") = tn::kRouteDeviceMemory;

  m.def("_default_generator", [](int index) {
    return py::reinterpret_steal<py::object>(
        THPGenerator_initDefaultGenerator(tn::default_generator(c10::DeviceIndex(index))));
  });

  m.def("_run_whole_on_core", &tn::run_whole_on_core);
  m.def("_register_c10d_kernels", &tn::register_c10d_kernels,
        "neuron (PrivateUse1) kernels of every c10d collective and p2p op");
  m.def("_set_op_policy", &tn::set_op_policy);
  m.def("_set_strict", &tn::set_strict);
  m.def("_strict", &tn::strict);
  m.def("_set_eager_fast_path", &tn::set_eager_fast_path);
  m.def("_eager_fast_path", &tn::eager_fast_path);
  m.def("_eager_fast_path_calls", &tn::eager_fast_path_calls);
  m.def("_executed_ops", &tn::executed_ops);
  m.def("_fallback_ops", &tn::fallback_ops);
  m.def("_clear_op_tracking", &tn::clear_op_tracking);
  m.def("_counters", &tn::counters);
  m.def("_clear_counters", &tn::clear_counters);
  m.def("_bump_counter", [](const std::string& name, int64_t by) { tn::bump(name.c_str(), by); });

  // performance model (torch_neuronx.perf): the eager hook's switch and its Python callback
  m.def("_perf_set_enabled", &tn::set_perf_enabled);
  m.def(
      "_set_perf_callback", [](py::object fn) { tn::set_perf_callback_object(fn.ptr()); },
      "callable(op_name, device, args, outputs, host_ns, fallback), or None");

  // torch.profiler device events, memory history / snapshots, logging, op source lines
  tn::bind_observability(m);
}
