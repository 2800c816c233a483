// Emulated Neuron runtime: topology (how many logical NeuronCores, how much HBM each),
// the current device of each thread, and lazy, fork-aware initialisation.
#pragma once

#include <c10/core/Device.h>
#include <cstdint>
#include <string>

namespace torch_neuronx {

constexpr c10::DeviceType kNeuron = c10::DeviceType::PrivateUse1;

// Set once from Python (torch_neuronx.runtime.topology) before the first device use.
void configure(int device_count, int64_t capacity_bytes, const std::string& profile);
int device_count();
int64_t device_capacity(int index);
const std::string& profile_name();

// Throws a clear error naming the index and the valid range.
void check_device_index(int64_t index);

int current_device();
void set_current_device(int index);

// Initialise the emulated runtime on first real use (allocation, explicit init()).
// Raises if the process was forked after initialisation (as CUDA does).
void lazy_init();
bool is_initialized();

// True in a child process forked after the parent initialised the device (it cannot use it).
bool in_bad_fork();

}  // namespace torch_neuronx
