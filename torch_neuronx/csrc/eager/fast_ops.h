// The eager fast path (fast_ops.cpp): unboxed kernels for the hottest structured ops that run
// CPU's structured kernel classes directly on neuron tensors.
#pragma once

#include <cstdint>

namespace torch_neuronx {

// On by default; TORCH_NEURONX_EAGER_FAST_PATH=0 (read once at import) sends every op through
// the generic path, which tests use to compare the two.
void set_eager_fast_path(bool on);
bool eager_fast_path();
// Calls the fast path ran (tests use it to know which path a call took).
int64_t eager_fast_path_calls();

}  // namespace torch_neuronx
