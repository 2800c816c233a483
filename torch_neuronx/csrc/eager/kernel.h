// The eager execution path of the emulated NeuronCore (kernel.cpp): the boxed kernel every
// ATen op on neuron tensors without a dedicated kernel reaches.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include <string>
#include <vector>

namespace torch_neuronx {

// Structured ops have a generic kernel for backends other than CPU/CUDA: run the meta
// function on device tensors, allocate the output on the device, then call the out= variant.
// When a CPU kernel exists, sending the whole functional/in-place op to the core at once
// does the same work once instead of twice (one shape inference, one allocation). `names`
// are aten op names with overload, without the namespace ("add.Tensor").
void run_whole_on_core(const std::vector<std::string>& names);

// The generic path for one call with its arguments on `stack` (what the boxed fallback runs);
// the unboxed fast path (fast_*.cpp) hands it the calls it does not cover.
void run_on_core_boxed(const c10::OperatorHandle& op, torch::jit::Stack* stack);

}  // namespace torch_neuronx
