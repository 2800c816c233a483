// scaled_dot_product_attention: PyTorch picks the fused kernel through a per-device choice
// stub and otherwise falls back to the unfused math path (matmul, softmax, matmul: several
// kernels and full attention matrices). The emulated core makes the same choice the host CPU
// would, so attention runs as CPU's fused flash kernel on device memory, with its backward.
#include <ATen/native/transformers/attention.h>
#include <ATen/ops/_fused_sdp_choice_ops.h>
#include <c10/core/TensorImpl.h>

namespace at::native {
namespace {

// A CPU tensor with `t`'s dtype and geometry and no data: the choice only looks at metadata,
// and this works the same for real, fake (tracing) and functional neuron tensors.
Tensor cpu_standin(const Tensor& t) {
  c10::Storage st(c10::Storage::use_byte_size_t(), 0, c10::DataPtr(nullptr, c10::Device(c10::kCPU)),
                  /*allocator=*/nullptr, /*resizable=*/false);
  auto out = at::detail::make_tensor<c10::TensorImpl>(
      std::move(st), c10::DispatchKeySet(c10::DispatchKey::CPU), t.dtype());
  out.unsafeGetTensorImpl()->set_sizes_and_strides(t.sizes(), t.strides(), 0);
  // The choice depends on requires_grad (e.g. a mask that needs a gradient rules out the
  // fused kernel), so the stand-in carries it too.
  if (t.requires_grad()) out.set_requires_grad(true);
  return out;
}

int64_t neuron_sdp_choice(const Tensor& q, const Tensor& k, const Tensor& v,
                          const std::optional<Tensor>& mask, double dropout_p, bool is_causal,
                          std::optional<double> scale, bool enable_gqa) {
  std::optional<Tensor> m;
  if (mask.has_value() && mask->defined()) m = cpu_standin(*mask);
  // Straight to CPU's kernel: no tracing mode or wrapper sees these stand-ins.
  return at::_ops::_fused_sdp_choice::redispatch(c10::DispatchKeySet(c10::DispatchKey::CPU),
                                                 cpu_standin(q), cpu_standin(k), cpu_standin(v), m,
                                                 dropout_p, is_causal, scale, enable_gqa);
}

}  // namespace

REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &neuron_sdp_choice)

}  // namespace at::native
