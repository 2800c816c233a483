// See perf_hook.h. The callback object is kept alive for the life of the process (never
// destroyed at exit, when Python may already be gone).
#include "runtime/perf_hook.h"

#include <pybind11/pybind11.h>
#include <torch/csrc/Export.h>

#include <chrono>
#include <mutex>

// From torch/csrc/jit/python/pybind_utils.h (libtorch_python), declared here instead of included:
// that header (with torch/extension.h, which it needs) took this 50-line file ~25 s to compile,
// longer than any other in the driver (issue 27). torch is pinned to one version (pyproject.toml),
// and a changed signature would fail at import with an undefined symbol.
namespace torch::jit {
TORCH_PYTHON_API pybind11::object toPyObject(c10::IValue ivalue);
}  // namespace torch::jit

namespace torch_neuronx {

namespace py = pybind11;

std::atomic<bool> g_perf_enabled{false};

namespace {
std::mutex g_callback_mutex;
py::object* g_callback = nullptr;  // guarded by the GIL and g_callback_mutex for swaps
}  // namespace

void set_perf_enabled(bool on) { g_perf_enabled.store(on, std::memory_order_relaxed); }

void set_perf_callback_object(void* py_callable) {
  // Called from Python with the GIL held.
  std::lock_guard<std::mutex> lock(g_callback_mutex);
  py::object fn = py::reinterpret_borrow<py::object>(static_cast<PyObject*>(py_callable));
  if (g_callback == nullptr) g_callback = new py::object();
  *g_callback = fn.is_none() ? py::object() : fn;
}

int64_t perf_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void report_op(const std::string& op_name, int device, const std::vector<c10::IValue>& args,
               const c10::IValue* outputs, size_t n_outputs, int64_t host_ns, bool fallback) {
  py::gil_scoped_acquire gil;
  if (g_callback == nullptr || !*g_callback) return;
  try {
    py::tuple a(args.size());
    for (size_t i = 0; i < args.size(); ++i) a[i] = torch::jit::toPyObject(args[i]);
    py::tuple o(n_outputs);
    for (size_t i = 0; i < n_outputs; ++i) o[i] = torch::jit::toPyObject(outputs[i]);
    (*g_callback)(op_name, device, a, o, host_ns, fallback);
  } catch (py::error_already_set& err) {
    std::string what = err.what();
    TORCH_CHECK(false, "torch_neuronx.perf: the performance model failed on ", op_name, ": ", what);
  }
}

}  // namespace torch_neuronx
