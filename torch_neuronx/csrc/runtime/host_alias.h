// Host aliasing: the emulated NeuronCore's memory is host RAM, so a neuron tensor can be
// viewed as a CPU tensor over the same bytes, and CPU results adopted as neuron tensors.
// This is how kernels "run on the device" with no copies in or out.
#pragma once

#include <ATen/core/Tensor.h>

namespace torch_neuronx {

// CPU tensor over the same bytes as neuron tensor `t` (same sizes/strides/offset, conj/neg
// bits). Its storage mirrors the whole neuron storage, keeps it alive, and is resizable
// through the routing allocator. Non-neuron tensors are returned unchanged.
at::Tensor host_alias(const at::Tensor& t);

// CPU tensor with `t`'s geometry on `host_storage`, a host storage that already aliases t's
// neuron storage (another argument's alias in the same op call). Arguments that share device
// memory then share one CPU storage, as they do on CPU, so CPU's memory-overlap checks
// (at::assert_no_overlap, TensorIterator's partial-overlap check) see them. Not cached.
at::Tensor host_alias_on(const at::Tensor& t, const c10::Storage& host_storage);

// Caches `host` as the alias of neuron tensor `t` when it views exactly `t`'s bytes and
// geometry (a kernel's fresh output that `t` adopted without a copy): the next op reading `t`
// then needs no new alias TensorImpl/StorageImpl.
void remember_host_alias(const at::Tensor& t, const at::Tensor& host);

// Neuron tensor on `device` holding CPU tensor `t`'s data: zero-copy when the memory came
// from that device's pool (allocation routing), else copied into device memory.
at::Tensor adopt_host_tensor(const at::Tensor& t, int device);

// Makes the neuron storage `dst` take over the bytes of the host storage `src` (used when
// a CPU kernel resized an out= argument through its alias).
void adopt_storage_bytes(c10::StorageImpl* dst, c10::StorageImpl* src, int device);

// Neuron tensor viewing `storage` with `like`'s geometry (sizes/strides/offset/conj/neg).
at::Tensor view_of_storage(const c10::Storage& storage, const at::Tensor& like);

}  // namespace torch_neuronx
