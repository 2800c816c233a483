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

void NeuronGeneratorImpl::set_current_seed(uint64_t seed) { host_.set_current_seed(seed); }
void NeuronGeneratorImpl::set_offset(uint64_t offset) { host_.set_offset(offset); }
uint64_t NeuronGeneratorImpl::get_offset() const { return host_.get_offset(); }
uint64_t NeuronGeneratorImpl::current_seed() const { return host_.current_seed(); }
uint64_t NeuronGeneratorImpl::seed() { return host_.seed(); }
void NeuronGeneratorImpl::set_state(const c10::TensorImpl& new_state) {
  host_.unsafeGetGeneratorImpl()->set_state(new_state);
}
c10::intrusive_ptr<c10::TensorImpl> NeuronGeneratorImpl::get_state() const {
  return host_.unsafeGetGeneratorImpl()->get_state();
}
NeuronGeneratorImpl* NeuronGeneratorImpl::clone_impl() const {
  auto* g = new NeuronGeneratorImpl(device().index());
  g->host_ = host_.clone();
  return g;
}

const at::Generator& default_generator(c10::DeviceIndex index) {
  static std::once_flag once;
  static auto& gens = *new std::vector<at::Generator>;  // leaked: outlives shutdown frees
  std::call_once(once, [] {
    for (int i = 0; i < device_count(); ++i)
      gens.push_back(at::make_generator<NeuronGeneratorImpl>(c10::DeviceIndex(i)));
  });
  if (index < 0) index = c10::DeviceIndex(current_device());
  check_device_index(index);
  return gens[index];
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
