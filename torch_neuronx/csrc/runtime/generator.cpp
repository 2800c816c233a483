#include "runtime/generator.h"

#include "runtime/runtime.h"

#include <memory>
#include <mutex>
#include <vector>

namespace torch_neuronx {

NeuronGeneratorImpl::NeuronGeneratorImpl(c10::DeviceIndex index)
    : c10::GeneratorImpl(c10::Device(c10::DeviceType::PrivateUse1, index),
                         c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
      host_(at::make_generator<at::CPUGeneratorImpl>(c10::default_rng_seed_val)) {}

// Kernels draw from host_ holding host_'s mutex (PyTorch's CPU kernels do); Python holds this
// generator's own mutex when seeding. Seeding, state and offset go through host_'s mutex too,
// so a seed from one thread never lands in the middle of another thread's draw.
#define TN_LOCK_HOST \
  std::lock_guard<std::mutex> host_lock(const_cast<at::Generator&>(host_).mutex())
void NeuronGeneratorImpl::set_current_seed(uint64_t seed) {
  TN_LOCK_HOST;
  host_.set_current_seed(seed);
}
void NeuronGeneratorImpl::set_offset(uint64_t offset) {
  TN_LOCK_HOST;
  host_.set_offset(offset);
}
uint64_t NeuronGeneratorImpl::get_offset() const {
  TN_LOCK_HOST;
  return host_.get_offset();
}
uint64_t NeuronGeneratorImpl::current_seed() const {
  TN_LOCK_HOST;
  return host_.current_seed();
}
uint64_t NeuronGeneratorImpl::seed() {
  TN_LOCK_HOST;
  return host_.seed();
}
void NeuronGeneratorImpl::set_state(const c10::TensorImpl& new_state) {
  TN_LOCK_HOST;
  host_.unsafeGetGeneratorImpl()->set_state(new_state);
}
c10::intrusive_ptr<c10::TensorImpl> NeuronGeneratorImpl::get_state() const {
  TN_LOCK_HOST;
  return host_.unsafeGetGeneratorImpl()->get_state();
}
NeuronGeneratorImpl* NeuronGeneratorImpl::clone_impl() const {
  auto* g = new NeuronGeneratorImpl(device().index());
  TN_LOCK_HOST;
  g->host_ = host_.clone();
  return g;
}
#undef TN_LOCK_HOST

const at::Generator& default_generator(c10::DeviceIndex index) {
  // One slot per possible index, each created on first use (any thread): the vector never
  // grows, so references handed out stay valid. Leaked: outlives shutdown frees.
  static auto& mu = *new std::mutex;
  static auto& gens =
      *new std::vector<at::Generator>(size_t(1) << (8 * sizeof(c10::DeviceIndex) - 1));
  if (index < 0) index = c10::DeviceIndex(current_device());
  check_device_index(index);
  std::lock_guard<std::mutex> g(mu);
  auto& gen = gens[size_t(index)];
  if (!gen.defined()) gen = at::make_generator<NeuronGeneratorImpl>(index);
  return gen;
}

at::Generator new_generator(c10::DeviceIndex index) {
  if (index < 0) index = c10::DeviceIndex(current_device());
  check_device_index(index);
  return at::make_generator<NeuronGeneratorImpl>(index);
}

at::Generator host_generator_for(const std::optional<at::Generator>& gen, int device) {
  if (gen.has_value() && gen->defined()) {
    if (gen->device().type() == c10::DeviceType::PrivateUse1) {
      return gen->get<NeuronGeneratorImpl>()->host_generator();
    }
    return *gen;  // a CPU generator passed explicitly: use it as given
  }
  return default_generator(c10::DeviceIndex(device)).get<NeuronGeneratorImpl>()->host_generator();
}

}  // namespace torch_neuronx
