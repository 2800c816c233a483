// TORCH_NEURONX_ENABLE_STACK_TRACE=1: every device op records where in the user's Python code
// it was called, so warnings, errors and fallback reports can name the user's file and line.
//
// At op entry the Python stack is captured unsymbolised (PyTorch's CapturedTraceback, a few
// microseconds); it is resolved to "file:line in function" only when a message needs it. The
// user's frame is the innermost one outside the library directories (torch, torch_neuronx)
// registered from Python.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace c10 {
struct GatheredContext;
}

namespace torch_neuronx {

void set_op_source_tracking(bool enabled, const std::vector<std::string>& library_dirs);
bool op_source_tracking();

// Captures the calling thread's stack for the op `name` for the scope's lifetime (nothing when
// tracking is off).
class OpSourceScope {
 public:
  explicit OpSourceScope(const char* name);
  ~OpSourceScope();
  OpSourceScope(const OpSourceScope&) = delete;
  OpSourceScope& operator=(const OpSourceScope&) = delete;

 private:
  bool active_ = false;
};

// "train.py:42 in step" for the innermost op of this thread ("" when tracking is off or no
// Python frame of the user's is on the stack, e.g. in autograd's backward threads).
std::string current_op_source();

// " (called from train.py:42 in step)" or "" : ready to append to a message.
std::string op_source_suffix();

// The fallback report: where each CPU-fallback op was called from (the first distinct
// source lines per op, in order). note_fallback_source() records the current op's line.
void note_fallback_source(const std::string& op);
std::map<std::string, std::vector<std::string>> fallback_sources();
void clear_fallback_sources();

}  // namespace torch_neuronx
