// Fast kernels for the optimizers' ops (issue 11): the foreach ops of torch.optim's Adam,
// AdamW and SGD, and the single-tensor ops their for-loop implementations (foreach=False) call.
//
// torch.optim picks its foreach implementation for neuron parameters (PrivateUse1 is in
// torch.utils._foreach_utils' supported devices). CPU's foreach kernels are its "slow" ones: a
// loop calling the single-tensor op per element (`t.mul_(scalar)`, `t.lerp_(end, weight)`).
// The generic path runs that loop on host aliases of every tensor of every list, once per
// call. Here the same loop runs CPU's structured class of the single-tensor op directly on each
// neuron tensor: the same meta checks, the same loops, so the same bits; the foreach op is
// tracked and planned once, as on the generic path. Calls that any element would send to the
// generic path (another device or dtype, a bfloat16 list with a Python number) go there whole.
#include "eager/fast_kernel.h"

#include <ATen/native/BinaryOps.h>
#include <ATen/native/Lerp.h>
#include <ATen/native/PointwiseOps.h>
#include <ATen/native/UnaryOps.h>
#include <ATen/ops/add_native.h>
#include <ATen/ops/addcdiv_native.h>
#include <ATen/ops/addcmul_native.h>
#include <ATen/ops/div_native.h>
#include <ATen/ops/lerp_native.h>
#include <ATen/ops/mul_native.h>
#include <ATen/ops/sqrt_native.h>
#include <torch/library.h>

#include <vector>

namespace torch_neuronx {
namespace fast {
namespace {

struct RegisterStubs {
  RegisterStubs() {
    using at::TensorIteratorBase;
    route_to_cpu<at::native::lerp_kernel_scalar_weight, TensorIteratorBase&, const c10::Scalar&>();
    route_to_cpu<at::native::addcmul_stub, TensorIteratorBase&, const c10::Scalar&>();
    route_to_cpu<at::native::addcdiv_stub, TensorIteratorBase&, const c10::Scalar&>();
    route_to_cpu<at::native::sqrt_stub, TensorIteratorBase&>();
  }
};
RegisterStubs g_register_stubs;

// The device of a foreach call whose lists are all non-empty, of one length, and hold neuron
// tensors of one device and one dtype (float32 only when `float32_only`: a Python number
// operand); -1 otherwise. CPU's own checks (list lengths, empty lists) then run on the generic
// path, with CPU's messages.
int eligible_lists(const Op& op, bool float32_only, std::initializer_list<at::TensorList> lists) {
  if (!fast_call_allowed(op)) return -1;
  const at::TensorList first = *lists.begin();
  if (first.empty() || !first[0].defined() || first[0].device().type() != kNeuron) return -1;
  const c10::Device device = first[0].device();
  const c10::ScalarType dtype = first[0].scalar_type();
  if (float32_only ? dtype != at::kFloat : !fast_dtype(dtype)) return -1;
  for (const at::TensorList& list : lists) {
    if (list.size() != first.size()) return -1;
    for (const at::Tensor& t : list)
      if (!t.defined() || t.device() != device || t.scalar_type() != dtype) return -1;
  }
  return device.index();
}

// `t op= other` by CPU's binary class; `other` is a tensor of the list or, for CPU's Scalar
// overloads (`t.mul_(0.9)`), the number as CPU's wrapped scalar tensor would reach the loop.
template <class Impl, typename... Extra>
void inplace_binary(at::Tensor& t, const at::Tensor& other, const Extra&... extra) {
  InPlace<Impl> k(t);
  k.meta(t, other, extra...);
  k.impl(t, other, extra..., t);
}

using namespace at::native;  // CPU's structured kernel classes

void foreach_add_scalar(at::TensorList self, const c10::Scalar& scalar) {
  NEURON_FAST_OP(op, "aten::_foreach_add_", "Scalar");
  at::Tensor number;
  int d = eligible_lists(op, true, {self});
  if (d >= 0 && !(number = scalar_operand(self[0], scalar)).defined()) d = -1;
  if (d < 0) return (void)generic(op, self, scalar);
  account(op, self, scalar);
  KernelScope scope(d);
  const c10::Scalar one(1);
  for (at::Tensor t : self) inplace_binary<structured_ufunc_add_CPU>(t, number, one);
}

void foreach_add_list(at::TensorList self, at::TensorList other, const c10::Scalar& alpha) {
  NEURON_FAST_OP(op, "aten::_foreach_add_", "List");
  const int d = eligible_lists(op, false, {self, other});
  if (d < 0) return (void)generic(op, self, other, alpha);
  account(op, self, other, alpha);
  KernelScope scope(d);
  for (size_t i = 0; i < self.size(); ++i) {
    at::Tensor t = self[i];
    inplace_binary<structured_ufunc_add_CPU>(t, other[i], alpha);
  }
}

void foreach_mul_scalar(at::TensorList self, const c10::Scalar& scalar) {
  NEURON_FAST_OP(op, "aten::_foreach_mul_", "Scalar");
  at::Tensor number;
  int d = eligible_lists(op, true, {self});
  if (d >= 0 && !(number = scalar_operand(self[0], scalar)).defined()) d = -1;
  if (d < 0) return (void)generic(op, self, scalar);
  account(op, self, scalar);
  KernelScope scope(d);
  for (at::Tensor t : self) inplace_binary<structured_mul_out>(t, number);
}

void foreach_div_scalar_list(at::TensorList self, at::ArrayRef<c10::Scalar> scalars) {
  NEURON_FAST_OP(op, "aten::_foreach_div_", "ScalarList");
  int d = eligible_lists(op, true, {self});
  if (scalars.size() != self.size()) d = -1;
  std::vector<at::Tensor> numbers;
  if (d >= 0) {
    numbers.reserve(scalars.size());
    for (const c10::Scalar& s : scalars) {
      numbers.push_back(scalar_operand(self[0], s));
      if (!numbers.back().defined()) d = -1;
    }
  }
  if (d < 0) return (void)generic(op, self, scalars);
  account(op, self, scalars);
  KernelScope scope(d);
  for (size_t i = 0; i < self.size(); ++i) {
    at::Tensor t = self[i];
    inplace_binary<structured_div_out>(t, numbers[i]);
  }
}

void foreach_lerp_scalar(at::TensorList self, at::TensorList end, const c10::Scalar& weight) {
  NEURON_FAST_OP(op, "aten::_foreach_lerp_", "Scalar");
  const int d = weight.isComplex() ? -1 : eligible_lists(op, false, {self, end});
  if (d < 0) return (void)generic(op, self, end, weight);
  account(op, self, end, weight);
  KernelScope scope(d);
  for (size_t i = 0; i < self.size(); ++i) {
    InPlace<structured_lerp_Scalar> k(self[i]);
    k.meta(self[i], end[i], weight);
    k.impl(self[i], end[i], weight, self[i]);
  }
}

// addcmul_ / addcdiv_ with one value per element.
template <class Impl>
void pointwise(at::TensorList self, at::TensorList t1, at::TensorList t2,
               c10::ArrayRef<c10::Scalar> values) {
  for (size_t i = 0; i < self.size(); ++i) {
    const c10::Scalar& v = values.size() == 1 ? values[0] : values[i];
    InPlace<Impl> k(self[i]);
    k.meta(self[i], t1[i], t2[i], v);
    k.impl(self[i], t1[i], t2[i], v, self[i]);
  }
}

// _foreach_addcmul_.Scalar and _foreach_addcdiv_.Scalar: one value for every element.
template <class Impl, const char* Name>
void foreach_pointwise_scalar(at::TensorList self, at::TensorList t1, at::TensorList t2,
                              const c10::Scalar& value) {
  NEURON_FAST_OP(op, Name, "Scalar");
  const int d = value.isComplex() ? -1 : eligible_lists(op, false, {self, t1, t2});
  if (d < 0) return (void)generic(op, self, t1, t2, value);
  account(op, self, t1, t2, value);
  KernelScope scope(d);
  pointwise<Impl>(self, t1, t2, {value});
}
constexpr char kForeachAddcmul[] = "aten::_foreach_addcmul_";
constexpr char kForeachAddcdiv[] = "aten::_foreach_addcdiv_";

void foreach_addcdiv_scalar_list(at::TensorList self, at::TensorList t1, at::TensorList t2,
                                 at::ArrayRef<c10::Scalar> scalars) {
  NEURON_FAST_OP(op, kForeachAddcdiv, "ScalarList");
  int d = eligible_lists(op, false, {self, t1, t2});
  if (scalars.size() != self.size()) d = -1;
  for (const c10::Scalar& s : scalars)
    if (s.isComplex()) d = -1;
  if (d < 0) return (void)generic(op, self, t1, t2, scalars);
  account(op, self, t1, t2, scalars);
  KernelScope scope(d);
  pointwise<structured_addcdiv_out>(self, t1, t2, scalars);
}

std::vector<at::Tensor> foreach_sqrt(at::TensorList self) {
  NEURON_FAST_OP(op, "aten::_foreach_sqrt", "");
  const int d = eligible_lists(op, false, {self});
  if (d < 0) return generic(op, self).toTensorVector();
  account(op, self);
  KernelScope scope(d);
  std::vector<at::Tensor> out;
  out.reserve(self.size());
  for (const at::Tensor& t : self) {
    OnDevice<structured_sqrt_out> k(d);
    k.meta(t);
    k.impl(t, k.maybe_get_output(0));
    out.push_back(k.take());
  }
  return out;
}

// ---- the single-tensor forms (for-loop optimizers, user code) ----
// In-place op of `self` and `Tensors` more tensors of its dtype, then non-tensor arguments.
template <class Impl, typename... Args>
at::Tensor& inplace(const Op& op, int d, at::Tensor& self, const Args&... args) {
  if (d < 0) {
    generic(op, self, args...);
    return self;
  }
  account(op, self, args...);
  KernelScope scope(d);
  InPlace<Impl> k(self);
  k.meta(self, args...);
  k.impl(self, args..., self);
  return self;
}

at::Tensor& lerp_scalar_(at::Tensor& self, const at::Tensor& end, const c10::Scalar& weight) {
  NEURON_FAST_OP(op, "aten::lerp_", "Scalar");
  const int d = weight.isComplex() ? -1 : eligible_device(op, self, end);
  return inplace<structured_lerp_Scalar>(op, d, self, end, weight);
}
at::Tensor& addcmul_(at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2,
                     const c10::Scalar& value) {
  NEURON_FAST_OP(op, "aten::addcmul_", "");
  const int d = value.isComplex() ? -1 : eligible_device(op, self, t1, t2);
  return inplace<structured_addcmul_out>(op, d, self, t1, t2, value);
}
at::Tensor& addcdiv_(at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2,
                     const c10::Scalar& value) {
  NEURON_FAST_OP(op, "aten::addcdiv_", "");
  const int d = value.isComplex() ? -1 : eligible_device(op, self, t1, t2);
  return inplace<structured_addcdiv_out>(op, d, self, t1, t2, value);
}
at::Tensor sqrt(const at::Tensor& self) {
  NEURON_FAST_OP(op, "aten::sqrt", "");
  return structured<structured_sqrt_out, 1>(op, self);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("lerp_.Scalar", TORCH_FN(lerp_scalar_));
  m.impl("addcmul_", TORCH_FN(addcmul_));
  m.impl("addcdiv_", TORCH_FN(addcdiv_));
  m.impl("sqrt", TORCH_FN(sqrt));
  m.impl("_foreach_add_.Scalar", TORCH_FN(foreach_add_scalar));
  m.impl("_foreach_add_.List", TORCH_FN(foreach_add_list));
  m.impl("_foreach_mul_.Scalar", TORCH_FN(foreach_mul_scalar));
  m.impl("_foreach_div_.ScalarList", TORCH_FN(foreach_div_scalar_list));
  m.impl("_foreach_lerp_.Scalar", TORCH_FN(foreach_lerp_scalar));
  m.impl("_foreach_addcmul_.Scalar",
         TORCH_FN((foreach_pointwise_scalar<structured_addcmul_out, kForeachAddcmul>)));
  m.impl("_foreach_addcdiv_.Scalar",
         TORCH_FN((foreach_pointwise_scalar<structured_addcdiv_out, kForeachAddcdiv>)));
  m.impl("_foreach_addcdiv_.ScalarList", TORCH_FN(foreach_addcdiv_scalar_list));
  m.impl("_foreach_sqrt", TORCH_FN(foreach_sqrt));
}

}  // namespace
}  // namespace fast
}  // namespace torch_neuronx
