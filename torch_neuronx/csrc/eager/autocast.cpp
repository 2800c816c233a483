// torch.autocast("neuron"): PyTorch's CUDA op lists (matmul-like ops in lower precision,
// softmax/norms/losses in float32, promotion for mixed inputs), registered for the
// AutocastPrivateUse1 key.
#include <ATen/autocast_mode.h>
#include <torch/library.h>

namespace {
using at::IntArrayRef;
using at::Scalar;
using at::ScalarType;
using at::Tensor;
using c10::string_view;
using namespace at::autocast;

Tensor binary_cross_entropy_banned(const Tensor&, const Tensor&, const std::optional<Tensor>&,
                                   int64_t) {
  TORCH_CHECK(false,
              "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to "
              "autocast on neuron. Use torch.nn.functional.binary_cross_entropy_with_logits or "
              "torch.nn.BCEWithLogitsLoss instead (they combine a sigmoid layer and the BCELoss "
              "and are safe to autocast).");
}

TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) { m.fallback(torch::CppFunction::makeFallthrough()); }

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
#define NEURON_LOWER(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
#define NEURON_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
#define NEURON_FP32_SET_OPT(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
#define NEURON_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)
  AT_FORALL_LOWER_PRECISION_FP(NEURON_LOWER)
  AT_FORALL_FP32(NEURON_FP32)
  AT_FORALL_FP32_SET_OPT_DTYPE(NEURON_FP32_SET_OPT)
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)
  AT_FORALL_PROMOTE(NEURON_PROMOTE)
  m.impl(TORCH_SELECTIVE_NAME("aten::binary_cross_entropy"),
         TORCH_FN((&binary_cross_entropy_banned)));
}
}  // namespace
