// The kernel plan cache's key: a 64-bit hash of an op and its argument signature (dtypes,
// devices, sizes, contiguity of tensors; values of the other arguments). The generic path
// hashes its boxed arguments (IValues); the fast path (fast_*.cpp) hashes its typed arguments
// with the overloads below, which give the same key as the IValue each argument would become,
// without building it (no reference-count traffic for tensors, no list allocation for a
// foreach op's tensor lists). The two paths share cache entries and counters.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/ivalue.h>
#include <c10/util/OptionalArrayRef.h>

#include <cstdint>
#include <optional>

namespace torch_neuronx {
namespace plan_key {

inline uint64_t mix(uint64_t h, uint64_t v) {
  v *= 0x9E3779B97F4A7C15ULL;
  v ^= v >> 29;
  return (h ^ v) * 0xBF58476D1CE4E5B9ULL;
}

inline uint64_t start(const c10::OperatorHandle& op) {
  return mix(0, reinterpret_cast<uint64_t>(&op.schema()));
}

inline uint64_t tensor(uint64_t h, const at::Tensor& t) {
  if (!t.defined()) return mix(h, 1);
  h = mix(h, uint64_t(t.scalar_type()) << 8 | uint64_t(t.device().type()));
  for (auto s : t.sizes()) h = mix(h, uint64_t(s));
  return mix(h, t.is_contiguous() ? 3 : 5);
}

// Any boxed argument (op_table.cpp).
uint64_t ivalue(uint64_t h, const c10::IValue& v);

// Typed arguments: the key of c10::IValue(v).
inline uint64_t arg(uint64_t h, const c10::IValue& v) { return ivalue(h, v); }
inline uint64_t arg(uint64_t h, const at::Tensor& t) { return tensor(h, t); }
inline uint64_t arg(uint64_t h, const std::optional<at::Tensor>& t) {
  return t.has_value() ? tensor(h, *t) : mix(h, 17);  // an empty optional boxes to None
}
inline uint64_t arg(uint64_t h, c10::ArrayRef<at::Tensor> ts) {  // boxes to a TensorList
  for (const at::Tensor& t : ts) h = tensor(h, t);
  return mix(h, 23);
}
inline uint64_t arg(uint64_t h, c10::IntArrayRef xs) {  // boxes to an int list
  for (int64_t x : xs) h = mix(h, uint64_t(x));
  return mix(h, 19);
}
inline uint64_t arg(uint64_t h, at::OptionalIntArrayRef xs) {
  return xs.has_value() ? arg(h, *xs) : mix(h, 17);
}
template <typename T>
uint64_t arg(uint64_t h, const T& v) {
  return ivalue(h, c10::IValue(v));
}

}  // namespace plan_key
}  // namespace torch_neuronx
