// Fast kernels for layer norm and the NLL loss (issue 11): the non-pointwise ops every
// transformer training step runs (TinyGPT: 5 layer norms forward and backward, one loss).
//
// CPU's layer norm (at::native::layer_norm_cpu / layer_norm_backward_cpu) allocates its results
// with at::empty_like on the input's device and calls its kernels with an explicit kCPU device
// type, so it runs unchanged on neuron tensors; the NLL loss is a structured op (CPU's class, as
// in fast_ops.cpp). Both take a call only when every tensor is a neuron tensor of one device and
// one floating dtype (the loss's target: int64 on the same device); mixed-precision layer norm
// (bfloat16 input, float32 weight) and everything else go to the generic path.
#include "eager/fast_kernel.h"

#include <ATen/ops/native_layer_norm_backward_native.h>
#include <ATen/ops/native_layer_norm_native.h>
#include <ATen/ops/nll_loss_backward_native.h>
#include <ATen/ops/nll_loss_forward_native.h>
#include <torch/library.h>

#include <tuple>

namespace torch_neuronx {
namespace fast {
namespace {

using Tensor3 = std::tuple<at::Tensor, at::Tensor, at::Tensor>;

// An optional tensor argument: absent, or of `like`'s device and dtype.
bool absent_or_like(const std::optional<at::Tensor>& t, const at::Tensor& like) {
  return !t.has_value() || !t->defined() ||
         (t->device() == like.device() && t->scalar_type() == like.scalar_type());
}

at::OptionalTensorRef ref(const std::optional<at::Tensor>& t) {
  return t.has_value() && t->defined() ? at::OptionalTensorRef(*t) : at::OptionalTensorRef();
}

Tensor3 layer_norm(const at::Tensor& input, c10::SymIntArrayRef normalized_shape,
                   const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
                   double eps) {
  NEURON_FAST_OP(op, "aten::native_layer_norm", "");
  int d = eligible_device(op, input);
  if (d >= 0 && !(absent_or_like(weight, input) && absent_or_like(bias, input))) d = -1;
  if (d < 0) {
    auto out = generic_results(op, input, normalized_shape, weight, bias, eps);
    return {out[0].toTensor(), out[1].toTensor(), out[2].toTensor()};
  }
  account(op, input, normalized_shape, weight, bias, eps);
  KernelScope scope(d);
  return at::native::layer_norm_cpu(input, C10_AS_INTARRAYREF_SLOW(normalized_shape), weight, bias,
                                    eps);
}

Tensor3 layer_norm_backward(const at::Tensor& grad_out, const at::Tensor& input,
                            c10::SymIntArrayRef normalized_shape, const at::Tensor& mean,
                            const at::Tensor& rstd, const std::optional<at::Tensor>& weight,
                            const std::optional<at::Tensor>& bias, std::array<bool, 3> mask) {
  NEURON_FAST_OP(op, "aten::native_layer_norm_backward", "");
  int d = eligible_device(op, input, grad_out, mean, rstd);
  if (d >= 0 && !(absent_or_like(weight, input) && absent_or_like(bias, input))) d = -1;
  if (d < 0) {
    auto out =
        generic_results(op, grad_out, input, normalized_shape, mean, rstd, weight, bias, mask);
    return {out[0].toTensor(), out[1].toTensor(), out[2].toTensor()};
  }
  account(op, grad_out, input, normalized_shape, mean, rstd, weight, bias, mask);
  KernelScope scope(d);
  return at::native::layer_norm_backward_cpu(
      grad_out, input, C10_AS_INTARRAYREF_SLOW(normalized_shape), mean, rstd, weight, bias, mask);
}

// The loss's device when `self` (and `also`) are neuron tensors of one floating dtype, the
// target an int64 tensor on the same device and the weight absent or like `self`.
int loss_device(const Op& op, const at::Tensor& self, const at::Tensor& target,
                const std::optional<at::Tensor>& weight, const at::Tensor& also) {
  const int d = eligible_device(op, self, also);
  if (d < 0 || !target.defined() || target.device() != self.device() ||
      target.scalar_type() != at::kLong || !absent_or_like(weight, self))
    return -1;
  return d;
}

std::tuple<at::Tensor, at::Tensor> nll_loss_forward(const at::Tensor& self,
                                                    const at::Tensor& target,
                                                    const std::optional<at::Tensor>& weight,
                                                    int64_t reduction, c10::SymInt ignore_index) {
  NEURON_FAST_OP(op, "aten::nll_loss_forward", "");
  const int d = loss_device(op, self, target, weight, self);
  if (d < 0) {
    auto out = generic_results(op, self, target, weight, reduction, ignore_index);
    return {out[0].toTensor(), out[1].toTensor()};
  }
  account(op, self, target, weight, reduction, ignore_index);
  const int64_t ignore = ignore_index.expect_int();
  OnDevice<at::native::structured_nll_loss_forward_out_cpu> k(d);
  KernelScope scope(d);
  k.meta(self, target, ref(weight), reduction, ignore);
  k.impl(self, target, ref(weight), reduction, ignore, k.maybe_get_output(0),
         k.maybe_get_output(1));
  return {k.take(0), k.take(1)};
}

at::Tensor nll_loss_backward(const at::Tensor& grad_output, const at::Tensor& self,
                             const at::Tensor& target, const std::optional<at::Tensor>& weight,
                             int64_t reduction, c10::SymInt ignore_index,
                             const at::Tensor& total_weight) {
  NEURON_FAST_OP(op, "aten::nll_loss_backward", "");
  int d = loss_device(op, self, target, weight, grad_output);
  if (d >= 0 &&
      !(total_weight.device() == self.device() && total_weight.scalar_type() == self.scalar_type()))
    d = -1;
  if (d < 0)
    return generic(op, grad_output, self, target, weight, reduction, ignore_index, total_weight)
        .toTensor();
  account(op, grad_output, self, target, weight, reduction, ignore_index, total_weight);
  const int64_t ignore = ignore_index.expect_int();
  OnDevice<at::native::structured_nll_loss_backward_out_cpu> k(d);
  KernelScope scope(d);  // the kernel zeroes its result through the dispatcher
  k.meta(grad_output, self, target, ref(weight), reduction, ignore, total_weight);
  k.impl(grad_output, self, target, ref(weight), reduction, ignore, total_weight,
         k.maybe_get_output(0));
  return k.take();
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("native_layer_norm", TORCH_FN(layer_norm));
  m.impl("native_layer_norm_backward", TORCH_FN(layer_norm_backward));
  m.impl("nll_loss_forward", TORCH_FN(nll_loss_forward));
  m.impl("nll_loss_backward", TORCH_FN(nll_loss_backward));
}

}  // namespace
}  // namespace fast
}  // namespace torch_neuronx
