// Where in the user's code each device op was called (see op_source.h).
#include "runtime/op_source.h"

#include <torch/csrc/profiler/combined_traceback.h>

#include <algorithm>
#include <atomic>
#include <mutex>

namespace torch_neuronx {
namespace {

std::atomic<bool> g_enabled{false};
std::mutex& g_mu = *new std::mutex;
std::vector<std::string>& g_library_dirs = *new std::vector<std::string>;

struct Captured {
  const char* name;
  std::shared_ptr<torch::CapturedTraceback> stack;
};
thread_local std::vector<Captured> t_ops;

constexpr size_t kMaxSourcesPerOp = 8;
std::mutex& g_fallback_mu = *new std::mutex;
auto& g_fallback_sources = *new std::map<std::string, std::vector<std::string>>;

bool in_library(const std::string& filename, const std::vector<std::string>& dirs) {
  if (filename.empty() || filename[0] == '<') return true;  // <frozen ...>, <string>
  for (const auto& d : dirs) {
    if (filename.compare(0, d.size(), d) == 0) return true;
  }
  return false;
}

}  // namespace

void set_op_source_tracking(bool enabled, const std::vector<std::string>& library_dirs) {
  {
    std::lock_guard<std::mutex> g(g_mu);
    g_library_dirs = library_dirs;
  }
  g_enabled.store(enabled, std::memory_order_relaxed);
}

bool op_source_tracking() { return g_enabled.load(std::memory_order_relaxed); }

OpSourceScope::OpSourceScope(const char* name) {
  if (!g_enabled.load(std::memory_order_relaxed)) return;
  t_ops.push_back(
      {name, torch::CapturedTraceback::gather(/*python=*/true, /*script=*/false, /*cpp=*/false)});
  active_ = true;
}

OpSourceScope::~OpSourceScope() {
  if (active_ && !t_ops.empty()) t_ops.pop_back();
}

std::string current_op_source() {
  if (t_ops.empty() || !t_ops.back().stack) return "";
  std::vector<std::string> dirs;
  {
    std::lock_guard<std::mutex> g(g_mu);
    dirs = g_library_dirs;
  }
  torch::SymbolizedTracebacks st = torch::symbolize({t_ops.back().stack.get()});
  if (st.tracebacks.empty()) return "";
  // Innermost frame first: the first one outside the libraries is the user's call site.
  for (uint64_t i : st.tracebacks[0]) {
    const auto& f = st.all_frames.at(i);
    if (!in_library(f.filename, dirs)) {
      return f.filename + ":" + std::to_string(f.lineno) + " in " + f.funcname;
    }
  }
  return "";
}

std::string op_source_suffix() {
  std::string src = current_op_source();
  return src.empty() ? "" : " (called from " + src + ")";
}

void note_fallback_source(const std::string& op) {
  if (!op_source_tracking()) return;
  std::string src = current_op_source();
  if (src.empty()) return;
  std::lock_guard<std::mutex> g(g_fallback_mu);
  auto& list = g_fallback_sources[op];
  if (list.size() < kMaxSourcesPerOp && std::find(list.begin(), list.end(), src) == list.end()) {
    list.push_back(std::move(src));
  }
}

std::map<std::string, std::vector<std::string>> fallback_sources() {
  std::lock_guard<std::mutex> g(g_fallback_mu);
  return g_fallback_sources;
}

void clear_fallback_sources() {
  std::lock_guard<std::mutex> g(g_fallback_mu);
  g_fallback_sources.clear();
}

}  // namespace torch_neuronx
