// The eager fast path (fast_ops.cpp, fast_foreach.cpp, fast_norm_loss.cpp, fast_copy.cpp):
// unboxed kernels for the hottest ops that run CPU's own kernels directly on neuron tensors.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace torch_neuronx {

// On by default; TORCH_NEURONX_EAGER_FAST_PATH=0 (read once at import) sends every op through
// the generic path, which tests use to compare the two.
void set_eager_fast_path(bool on);
bool eager_fast_path();
// Calls the fast path ran (tests use it to know which path a call took).
int64_t eager_fast_path_calls();

// dst.copy_(src) for two neuron tensors of one device, run directly on the device tensors
// (fast_copy.cpp); false when the call needs the general copy kernel.
bool fast_device_copy(const at::Tensor& src, const at::Tensor& dst, bool non_blocking);

}  // namespace torch_neuronx
