// scaled_dot_product_attention: PyTorch picks the fused kernel through a per-device choice
// stub and otherwise falls back to the unfused math path (matmul, softmax, matmul: several
// kernels and full attention matrices). The emulated core makes the same choice the host CPU
// would, so attention runs as CPU's fused flash kernel on device memory, with its backward.
#include "host_alias.h"

#include <ATen/native/transformers/attention.h>
#include <ATen/ops/_fused_sdp_choice.h>

namespace at::native {
namespace {

int64_t neuron_sdp_choice(const Tensor& q, const Tensor& k, const Tensor& v,
                          const std::optional<Tensor>& mask, double dropout_p, bool is_causal,
                          std::optional<double> scale, bool enable_gqa) {
  std::optional<Tensor> m;
  if (mask.has_value() && mask->defined()) m = torch_neuronx::host_alias(*mask);
  // The op (not the stub) so that CPU's own choice logic runs on the host aliases.
  return at::_fused_sdp_choice(torch_neuronx::host_alias(q), torch_neuronx::host_alias(k),
                               torch_neuronx::host_alias(v), m, dropout_p, is_causal, scale,
                               enable_gqa);
}

}  // namespace

REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &neuron_sdp_choice)

}  // namespace at::native
