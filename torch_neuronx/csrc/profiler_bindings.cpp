// Python bindings of the driver's observability mechanisms: torch.profiler device events,
// allocator history / memory snapshots, and the log sink. Called from bindings.cpp.
#include "runtime/allocator.h"
#include "runtime/device_trace.h"
#include "runtime/log.h"
#include "runtime/memory_history.h"
#include "runtime/op_source.h"
#include "runtime/runtime.h"

#include <pybind11/stl.h>
#include <torch/csrc/Export.h>
#include <torch/csrc/profiler/combined_traceback.h>

// From torch/csrc/profiler/python/combined_traceback.h (libtorch_python), which cannot be
// included here: it includes nlohmann/json.hpp, which the torch wheel does not ship.
namespace torch {
TORCH_API std::vector<pybind11::object> py_symbolize(std::vector<CapturedTraceback*>& to_symbolize);
TORCH_PYTHON_API void installCapturedTracebackPython();
}  // namespace torch

namespace torch_neuronx {
namespace {

namespace py = pybind11;

// Wraps a Python callable so the driver may call it from any thread.
std::function<void()> python_callback(py::object fn) {
  if (fn.is_none()) return {};
  auto holder = std::make_shared<py::object>(std::move(fn));
  return [holder]() {
    py::gil_scoped_acquire gil;
    (*holder)();
  };
}

// torch.cuda.memory._snapshot()'s dictionary for the neuron allocator.
py::dict memory_snapshot() {
  const int n = device_count();
  // Mark the snapshot in the trace first, as the CUDA allocator does.
  for (int d = 0; d < n; ++d) memory_history_record(d, MemAction::Snapshot, 0, 0, nullptr);

  std::vector<SegmentInfo> segments;
  for (int d = 0; d < n; ++d) {
    auto s = segment_infos(d);
    segments.insert(segments.end(), std::make_move_iterator(s.begin()),
                    std::make_move_iterator(s.end()));
  }
  auto traces = memory_history_traces(n);

  // Symbolise every captured stack in one call (frames are shared between entries).
  std::vector<torch::CapturedTraceback*> to_symbolize;
  std::vector<std::shared_ptr<c10::GatheredContext>> keep_alive;
  auto slot = [&](const std::shared_ptr<c10::GatheredContext>& ctx) -> int64_t {
    if (!ctx) return -1;
    keep_alive.push_back(ctx);
    to_symbolize.push_back(torch::getCapturedTracebackFromContext(ctx));
    return int64_t(to_symbolize.size()) - 1;
  };
  std::vector<int64_t> seg_slots, trace_slots;
  std::vector<std::vector<int64_t>> block_slots;
  for (const auto& seg : segments) {
    seg_slots.push_back(slot(memory_history_segment_context(seg.address)));
    block_slots.emplace_back();
    for (const auto& b : seg.blocks) {
      block_slots.back().push_back(b.allocated ? slot(memory_history_block_context(b.address))
                                               : -1);
    }
  }
  for (const auto& dev : traces) {
    for (const auto& e : dev) trace_slots.push_back(slot(e.context));
  }
  std::vector<py::object> frames = torch::py_symbolize(to_symbolize);
  auto frames_of = [&](int64_t i) -> py::object {
    return i < 0 ? py::object(py::list()) : frames[i];
  };

  py::list py_segments;
  for (size_t i = 0; i < segments.size(); ++i) {
    const auto& seg = segments[i];
    int64_t allocated = 0, requested = 0;
    py::list blocks;
    for (size_t j = 0; j < seg.blocks.size(); ++j) {
      const auto& b = seg.blocks[j];
      py::dict block;
      block["address"] = b.address;
      block["size"] = b.size;
      block["requested_size"] = b.allocated ? b.requested : 0;
      block["state"] = b.allocated ? "active_allocated" : "inactive";
      block["frames"] = frames_of(block_slots[i][j]);
      blocks.append(block);
      if (b.allocated) {
        allocated += b.size;
        requested += b.requested;
      }
    }
    py::dict s;
    s["device"] = seg.device;
    s["address"] = seg.address;
    s["total_size"] = seg.total_size;
    s["allocated_size"] = allocated;
    s["active_size"] = allocated;  // frees complete at once: nothing awaits a stream
    s["requested_size"] = requested;
    s["stream"] = 0;
    s["segment_type"] = seg.small ? "small" : "large";
    s["segment_pool_id"] = py::make_tuple(0, 0);
    s["is_expandable"] = false;
    s["frames"] = frames_of(seg_slots[i]);
    s["blocks"] = blocks;
    py_segments.append(s);
  }

  py::list device_traces;
  size_t k = 0;
  for (const auto& dev : traces) {
    py::list entries;
    for (const auto& e : dev) {
      py::dict entry;
      entry["action"] = mem_action_name(e.action);
      entry["addr"] = e.addr;
      entry["size"] = e.size;
      entry["stream"] = 0;
      entry["time_us"] = e.time_us;
      entry["frames"] = frames_of(trace_slots[k++]);
      if (e.action == MemAction::Oom) entry["device_free"] = e.device_free;
      entries.append(entry);
    }
    device_traces.append(entries);
  }

  py::dict settings;
  settings["PYTORCH_NEURON_ALLOC_CONF"] = "";
  settings["max_split_size"] = -1;
  settings["roundup_power2_divisions"] = 4;
  settings["expandable_segments"] = false;

  py::dict out;
  out["segments"] = py_segments;
  out["device_traces"] = device_traces;
  out["allocator_settings"] = settings;
  out["external_annotations"] = py::list();
  return out;
}

}  // namespace

void bind_observability(py::module_& m) {
  m.def("_trace_device_work",
        [](int device, const std::string& kind, const std::string& name, const std::string& engine,
           const std::string& shapes, const std::string& dtype, const std::string& bound,
           const std::string& detail, double flops, double bytes, int64_t duration_ns) {
          DeviceWork w;
          w.device = device;
          w.kind = kind;
          w.name = name;
          w.engine = engine;
          w.shapes = shapes;
          w.dtype = dtype;
          w.bound = bound;
          w.detail = detail;
          w.flops = flops;
          w.bytes = bytes;
          w.duration_ns = duration_ns;
          record_device_work(w);
        });
  m.def("_device_trace_active", &device_trace_active);
  m.def("_device_trace_sessions", &device_trace_sessions);
  m.def("_set_device_trace_callbacks", [](py::object on_start, py::object on_stop) {
    set_device_trace_callbacks(python_callback(std::move(on_start)),
                               python_callback(std::move(on_stop)));
  });

  m.def("_record_memory_history",
        [](bool enabled, bool record_trace, bool alloc_stacks, bool free_stacks, bool cpp_stacks,
           int64_t max_entries, uint32_t skip_actions, bool clear) {
          // Python frames are captured by the unwinder PyTorch installs for its own allocator.
          torch::installCapturedTracebackPython();
          MemoryHistoryConfig c;
          c.enabled = enabled;
          c.record_trace = record_trace;
          c.alloc_stacks = alloc_stacks;
          c.free_stacks = free_stacks;
          c.cpp_stacks = cpp_stacks;
          c.max_entries = size_t(std::max<int64_t>(max_entries, 1));
          c.skip_actions = skip_actions;
          set_memory_history(c, clear);
        });
  m.def("_memory_snapshot", &memory_snapshot);

  m.def("_set_log_sink", [](py::object sink, int level) {
    if (sink.is_none()) {
      set_log_sink({}, level);
      return;
    }
    auto holder = std::make_shared<py::object>(std::move(sink));
    set_log_sink(
        [holder](int lvl, const std::string& logger, const std::string& message) {
          py::gil_scoped_acquire gil;
          (*holder)(lvl, logger, message);
        },
        level);
  });
  m.def("_set_op_source_tracking", &set_op_source_tracking);
  m.def("_op_source_tracking", &op_source_tracking);
  m.def("_current_op_source", &current_op_source);
  m.def("_fallback_sources", &fallback_sources);
  m.def("_clear_fallback_sources", &clear_fallback_sources);
}

}  // namespace torch_neuronx
