// convolution_backward on the core, around a oneDNN defect the host's kernel has.
//
// The core runs a convolution's backward with CPU's kernel on the host view (kernel.cpp). For
// a 1x1 convolution with a stride above 1, channels-last (nhwc) activations and fewer input
// channels per group than oneDNN's channel block, oneDNN's AVX2 `jit_1x1` weight-gradient
// kernel writes past its "reduce to unit stride" workspace (oneDNN issue #6035, open:
// https://github.com/uxlfoundation/oneDNN/issues/6035). Measured with torch 2.13.0 on this
// project's AVX2 hosts (FastViT's stem: 3 input channels, stride 2): under one thread, heap
// corruption ("double free or corruption"); under two, a hang on neuron and, on CPU, weight
// gradients 78-88 % off. The same problem with contiguous (nchw) tensors takes oneDNN's blocked
// path and is right. So in that case the core runs the backward on contiguous copies and
// gives the gradients back in the memory format CPU's kernel would have given them.
// (Compiled graphs call the host's kernel directly; compile/host_decompositions.py routes
// them around the defect the same way.)

#include <ATen/ATen.h>
#include <torch/library.h>

#include "eager/kernel.h"

namespace torch_neuronx {
namespace {

// oneDNN's input-channel block: 8 floats on AVX2, 16 on AVX-512; below the larger of the two
// the workspace path is taken on either.
constexpr int64_t kChannelBlock = 16;

// The arguments of aten::convolution_backward, from the start of its 11.
enum Arg : size_t {
  kGradOutput = 0,
  kInput = 1,
  kWeight = 2,
  kStride = 4,
  kTransposed = 7,
  kGroups = 9,
  kOutputMask = 10,
  kNumArgs = 11
};

// the dtypes CPU's convolution runs with oneDNN (float64 takes PyTorch's own kernels)
bool is_onednn_dtype(c10::ScalarType t) {
  return t == at::kFloat || t == at::kBFloat16 || t == at::kHalf;
}

bool hits_onednn_workspace_defect(const torch::jit::Stack& stack, size_t base) {
  const auto& input = stack[base + kInput].toTensor();
  const auto& weight = stack[base + kWeight].toTensor();
  if (stack[base + kTransposed].toBool() || !stack[base + kOutputMask].toBoolList().get(1))
    return false;
  if ((weight.dim() != 4 && weight.dim() != 5) || !is_onednn_dtype(input.scalar_type()))
    return false;
  for (int64_t d = 2; d < weight.dim(); ++d)
    if (weight.size(d) != 1) return false;  // a 1x1 (1x1x1) kernel
  bool strided = false;
  for (auto s : stack[base + kStride].toIntVector()) strided = strided || s > 1;
  if (!strided) return false;
  const int64_t groups = stack[base + kGroups].toInt();
  if (groups <= 0 || input.size(1) / groups >= kChannelBlock) return false;
  // PyTorch's oneDNN convolution runs channels-last when the input or the weight suggests it
  return input.suggest_memory_format() != at::MemoryFormat::Contiguous ||
         weight.suggest_memory_format() != at::MemoryFormat::Contiguous;
}

void convolution_backward_on_core(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const size_t base = stack->size() - kNumArgs;
  if (!hits_onednn_workspace_defect(*stack, base)) return run_on_core_boxed(op, stack);
  const auto format = (*stack)[base + kInput].toTensor().dim() == 5
                          ? at::MemoryFormat::ChannelsLast3d
                          : at::MemoryFormat::ChannelsLast;
  for (size_t i : {kGradOutput, kInput, kWeight})
    (*stack)[base + i] = (*stack)[base + i].toTensor().contiguous();
  run_on_core_boxed(op, stack);
  // the outputs (grad_input, grad_weight, grad_bias) now end the stack: the first two in the
  // format CPU's channels-last kernel gives them
  const size_t out = stack->size() - 3;
  for (size_t i = 0; i < 2; ++i) {
    auto& v = (*stack)[out + i];
    // clone, not contiguous(format): a weight gradient with 1x1 spatial sizes is already
    // "channels-last contiguous" and would keep its nchw strides, where CPU's gives nhwc ones
    if (v.isTensor() && v.toTensor().defined()) v = v.toTensor().clone(format);
  }
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("convolution_backward",
         torch::CppFunction::makeFromBoxedFunction<&convolution_backward_on_core>());
}

}  // namespace torch_neuronx
