// Device-to-device copies on one device without host aliases (issue 11).
//
// Every `copy_` between neuron tensors reaches the driver as _copy_from (PyTorch's copy_ hands
// devices it does not know to their _copy_from kernel). The general kernel (native_ops.cpp)
// views both sides as CPU tensors and runs CPU's copy_; for two neuron tensors of one device it
// is enough to run the TensorIterator and copy loop CPU's copy_ runs (the same dtype
// conversions, the same memory-overlap checks), directly on the device tensors. Linear layers
// pay one such copy per call (addmm copies its bias into the result).
#include "eager/fast_kernel.h"

#include <ATen/native/Copy.h>

namespace torch_neuronx {

bool fast_device_copy(const at::Tensor& src, const at::Tensor& dst, bool non_blocking) {
  if (!fast::fast_path_on() || perf_enabled()) return false;  // the model costs each transfer
  if (src.device() != dst.device() || src.device().type() != kNeuron) return false;
  // Complex values, conjugate/negative views and quantized tensors: CPU's copy_ has extra
  // steps for them; they keep the general kernel.
  if (src.is_complex() || dst.is_complex() || src.is_conj() || dst.is_conj() || src.is_neg() ||
      dst.is_neg() || src.is_quantized() || dst.is_quantized())
    return false;
  // CPU's copy_impl: copying a tensor onto itself, or onto the same bytes seen the same way,
  // does nothing.
  if (src.is_same(dst)) return true;
  if (dst.is_alias_of(src) && dst.storage_offset() == src.storage_offset() &&
      dst.strides().equals(src.strides()) && dst.sizes().equals(src.sizes()) &&
      dst.scalar_type() == src.scalar_type())
    return true;
  auto iter = at::TensorIteratorConfig()
                  .add_output(dst)
                  .add_const_input(src)
                  .resize_outputs(false)
                  .check_all_same_dtype(false)
                  .check_all_same_device(false)
                  .build();
  // Counted as a fast-path call when the user's program asked for it, not when a fast kernel
  // copies inside (addmm's bias into its result), as the generic path tracks calls.
  if (!tracking_paused()) fast::note_fast_call();
  if (iter.numel() == 0) return true;
  at::native::copy_stub(c10::DeviceType::CPU, iter, non_blocking);
  return true;
}

}  // namespace torch_neuronx
