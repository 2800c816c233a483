#include "runtime/host_alias.h"

#include "runtime/allocator.h"
#include "runtime/runtime.h"

#include <ATen/ops/empty.h>
#include <c10/core/TensorImpl.h>
#include <array>
#include <cstdint>
#include <cstring>
#include <mutex>

namespace torch_neuronx {
namespace {

void release_storage_ref(void* ctx) {
  c10::raw::intrusive_ptr::decref(static_cast<c10::StorageImpl*>(ctx));
}

c10::DataPtr keepalive_ptr(const c10::Storage& s, c10::Device label) {
  c10::StorageImpl* impl = s.unsafeGetStorageImpl();
  c10::raw::intrusive_ptr::incref(impl);
  return c10::DataPtr(const_cast<void*>(s.data()), impl, &release_storage_ref, label);
}

// A DataPtr that keeps the bytes of neuron storage `s` alive by co-owning what owns them, not
// `s` itself: the device block (Block::owners), or the host storage a neuron storage adopted
// (a kernel's output, kept alive by `release_storage_ref`). So the neuron storage keeps a use
// count of one, as a CPU tensor's does, while its alias lives (allocator.h, share_device_memory).
c10::DataPtr co_owner_ptr(const c10::Storage& s, c10::Device label) {
  const c10::DataPtr& dp = s.data_ptr();
  if (is_device_memory(dp)) return share_device_memory(dp, label);
  if (dp.get_deleter() == &release_storage_ref && dp.get() == s.data()) {
    auto* owner = static_cast<c10::StorageImpl*>(dp.get_context());
    c10::raw::intrusive_ptr::incref(owner);
    return c10::DataPtr(const_cast<void*>(s.data()), owner, &release_storage_ref, label);
  }
  return keepalive_ptr(s, label);  // anything else: the storage itself keeps them
}

void copy_geometry(const at::Tensor& from, c10::TensorImpl* to) {
  to->set_sizes_and_strides(from.sizes(), from.strides(), from.storage_offset());
  if (from.is_conj()) to->_set_conj(true);
  if (from.is_neg()) to->_set_neg(true);
}

}  // namespace

// The alias of a neuron tensor is cached on it (TensorImpl backend metadata, the slot PyTorch
// keeps for PrivateUse1 backends) and reused while the tensor still has the same storage,
// bytes and geometry: tensors are used many times (weights every step), and building an
// alias costs a TensorImpl and a StorageImpl.
struct CachedAlias final : c10::BackendMeta {
  explicit CachedAlias(at::Tensor a) : alias(std::move(a)) {}
  at::Tensor alias;
};

static bool still_valid(const at::Tensor& t, const at::Tensor& a) {
  const c10::StorageImpl* ns = t.storage().unsafeGetStorageImpl();
  const c10::StorageImpl* as = a.storage().unsafeGetStorageImpl();
  return as->data() == ns->data() && as->nbytes() == ns->nbytes() &&
         a.storage_offset() == t.storage_offset() && a.sizes() == t.sizes() &&
         a.strides() == t.strides() && a.dtype() == t.dtype() && a.is_conj() == t.is_conj() &&
         a.is_neg() == t.is_neg();
}

static at::Tensor build_alias(const at::Tensor& t) {
  const c10::Storage& st = t.storage();
  auto cpu_storage = c10::make_intrusive<c10::StorageImpl>(
      c10::StorageImpl::use_byte_size_t(), st.nbytes(), co_owner_ptr(st, c10::Device(c10::kCPU)),
      routing_cpu_allocator(), /*resizable=*/true);
  auto alias = at::detail::make_tensor<c10::TensorImpl>(
      c10::Storage(std::move(cpu_storage)), c10::DispatchKeySet(c10::DispatchKey::CPU), t.dtype());
  copy_geometry(t, alias.unsafeGetTensorImpl());
  return alias;
}

// Threads share tensors (a model's weights in parallel inference): replacing the cached alias
// frees the previous one, so reading it (and taking a reference) and replacing it happen under
// the same lock. Striped by TensorImpl, so unrelated tensors rarely contend.
static std::mutex& alias_lock(const c10::TensorImpl* impl) {
  static auto& locks = *new std::array<std::mutex, 64>;  // leaked, like all driver globals
  return locks[(reinterpret_cast<uintptr_t>(impl) >> 6) % locks.size()];
}

at::Tensor host_alias(const at::Tensor& t) {
  if (!t.defined() || t.device().type() != kNeuron) return t;
  c10::TensorImpl* impl = t.unsafeGetTensorImpl();
  {
    std::lock_guard<std::mutex> g(alias_lock(impl));
    if (auto* meta = dynamic_cast<CachedAlias*>(impl->get_backend_meta())) {
      if (C10_LIKELY(still_valid(t, meta->alias))) return meta->alias;
    }
  }
  at::Tensor alias = build_alias(t);
  std::lock_guard<std::mutex> g(alias_lock(impl));
  impl->set_backend_meta(c10::make_intrusive<CachedAlias>(alias));
  return alias;
}

at::Tensor host_alias_on(const at::Tensor& t, const c10::Storage& host_storage) {
  auto alias = at::detail::make_tensor<c10::TensorImpl>(
      c10::Storage(host_storage), c10::DispatchKeySet(c10::DispatchKey::CPU), t.dtype());
  copy_geometry(t, alias.unsafeGetTensorImpl());
  return alias;
}

void remember_host_alias(const at::Tensor& t, const at::Tensor& host) {
  if (!t.defined() || !host.defined() || t.device().type() != kNeuron || !host.device().is_cpu())
    return;
  if (!still_valid(t, host)) return;  // copied, not shared: the alias would be a different buffer
  c10::TensorImpl* impl = t.unsafeGetTensorImpl();
  std::lock_guard<std::mutex> g(alias_lock(impl));
  impl->set_backend_meta(c10::make_intrusive<CachedAlias>(host));
}

at::Tensor view_of_storage(const c10::Storage& storage, const at::Tensor& like) {
  auto out = at::detail::make_tensor<c10::TensorImpl>(
      c10::Storage(storage), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), like.dtype());
  copy_geometry(like, out.unsafeGetTensorImpl());
  return out;
}

// Device bytes for host storage `src`: shared (the neuron storage keeps `src` alive) when
// the memory belongs to `device`'s pool or is host workspace of a kernel that ran for it
// (adopted: it counts as device memory from now on), else copied into fresh device memory.
static c10::DataPtr to_device_bytes(c10::StorageImpl* src, int device) {
  size_t n = src->nbytes();
  if (adopt_as_device_memory(src->data_ptr(), device)) {
    return keepalive_ptr(c10::Storage(c10::intrusive_ptr<c10::StorageImpl>::reclaim_copy(src)),
                         c10::Device(kNeuron, device));
  }
  c10::DataPtr dp = allocate_on(device, n, c10::Device(kNeuron, device));
  if (n) std::memcpy(dp.get(), src->data(), n);
  return dp;
}

void adopt_storage_bytes(c10::StorageImpl* dst, c10::StorageImpl* src, int device) {
  size_t n = src->nbytes();
  dst->set_data_ptr_noswap(to_device_bytes(src, device));
  dst->set_nbytes(n);
}

at::Tensor adopt_host_tensor(const at::Tensor& t, int device) {
  if (!t.defined() || t.device().type() == kNeuron) return t;
  TORCH_CHECK(t.layout() == c10::kStrided,
              "neuron: only strided tensors can live on the neuron device, got layout ", t.layout(),
              " (torch.sparse / torch.nested tensors are not supported; keep them on CPU"
              " or convert with .to_dense()).");
  TORCH_CHECK(t.device().is_cpu(), "neuron: cannot adopt a tensor on ", t.device());
  check_device_index(device);
  c10::StorageImpl* src = t.storage().unsafeGetStorageImpl();
  auto st = c10::make_intrusive<c10::StorageImpl>(c10::StorageImpl::use_byte_size_t(),
                                                  src->nbytes(), to_device_bytes(src, device),
                                                  neuron_allocator(), /*resizable=*/true);
  return view_of_storage(c10::Storage(std::move(st)), t);
}

}  // namespace torch_neuronx
