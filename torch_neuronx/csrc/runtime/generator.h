// Random number generators of the neuron device. Each one wraps a CPU (mt19937) generator,
// because random kernels run on the host CPU; the neuron generator's state is its own, so
// CPU and neuron random streams are independent, as on CUDA.
#pragma once

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Generator.h>
#include <c10/core/GeneratorImpl.h>

namespace torch_neuronx {

struct NeuronGeneratorImpl : public c10::GeneratorImpl {
  // Seeded with PyTorch's default seed, as CPU and CUDA generators are.
  explicit NeuronGeneratorImpl(c10::DeviceIndex index);
  void set_current_seed(uint64_t seed) override;
  void set_offset(uint64_t offset) override;
  uint64_t get_offset() const override;
  uint64_t current_seed() const override;
  uint64_t seed() override;
  void set_state(const c10::TensorImpl& new_state) override;
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override;
  static c10::DeviceType device_type() { return c10::DeviceType::PrivateUse1; }

  // The CPU generator that random CPU kernels draw from on behalf of this generator.
  const at::Generator& host_generator() const { return host_; }

 private:
  NeuronGeneratorImpl* clone_impl() const override;
  at::Generator host_;
};

const at::Generator& default_generator(c10::DeviceIndex index);
at::Generator new_generator(c10::DeviceIndex index);

// The host CPU generator to use for a (possibly undefined) generator argument on `device`.
at::Generator host_generator_for(const std::optional<at::Generator>& gen, int device);

}  // namespace torch_neuronx
