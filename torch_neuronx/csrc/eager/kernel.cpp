// The eager execution path of the emulated NeuronCore.
//
// Every ATen op on neuron tensors without a dedicated kernel reaches `run_on_core`, a boxed
// kernel registered for the PrivateUse1 key. It (1) applies TorchNeuron's op policy and
// tracking, (2) looks up the op's kernel plan (compiled on first use per signature),
// (3) rewrites the arguments as CPU aliases of the device memory (no copies), (4) runs the
// CPU kernel with allocations routed to the device's memory pool, and (5) maps results back
// to neuron tensors: aliases of inputs become the inputs again, views keep sharing the
// input's storage, fresh outputs adopt the device memory they were written into.
#include "eager/kernel.h"

#include "eager/op_table.h"
#include "runtime/allocator.h"
#include "runtime/generator.h"
#include "runtime/host_alias.h"
#include "runtime/runtime.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/SmallVector.h>
#include <torch/library.h>

namespace torch_neuronx {
namespace {

struct Aliased {
  at::Tensor original;   // the neuron tensor the caller passed
  at::Tensor alias;      // its CPU alias handed to the kernel
  at::Tensor promoted;   // float32 stand-in when float64 arithmetic is downcast
  bool written = false;  // the schema marks the argument as mutated (in-place / out=)
};

struct CallState {
  c10::SmallVector<Aliased, 8> tensors;
  int device = -1;
  bool saw_cpu_nonscalar = false;
  c10::Device other_device = c10::Device(c10::kCPU);
};

[[noreturn]] void mixed_device_error(const OpEntry& e, int device, c10::Device other) {
  TORCH_CHECK(false,
              "Expected all tensors to be on the same device, but found at least two "
              "devices, neuron:",
              device, " and ", other, "! (when checking arguments for ", e.name, ")");
}

at::Tensor alias_arg(CallState& st, const at::Tensor& t, const OpEntry& e) {
  if (!t.defined()) return t;
  if (t.device().type() == kNeuron) {
    int d = t.device().index();
    if (st.device < 0) {
      st.device = d;
    } else if (d != st.device && !e.facts.mixed_device_ok) {
      mixed_device_error(e, st.device, t.device());
    }
    TORCH_CHECK(t.layout() == c10::kStrided, "neuron: ", e.name,
                " got a non-strided neuron tensor");
    at::Tensor a = host_alias(t);
    st.tensors.push_back({t, a, at::Tensor()});
    return a;
  }
  if (t.device().is_cpu() && t.dim() > 0) {
    st.saw_cpu_nonscalar = true;
  } else if (!t.device().is_cpu()) {
    st.saw_cpu_nonscalar = true;
    st.other_device = t.device();
  }
  return t;
}

// Rewrites one argument in place: neuron tensors, alone or in lists, become their host aliases.
void alias_ivalue(CallState& st, c10::IValue& v, const OpEntry& e) {
  if (v.isTensor()) {
    v = alias_arg(st, v.toTensor(), e);
  } else if (v.isTensorList()) {
    auto list = v.toTensorList();
    c10::List<at::Tensor> out;
    out.reserve(list.size());
    for (const at::Tensor& t : list) out.push_back(alias_arg(st, t, e));
    v = out;
  } else if (v.isOptionalTensorList()) {
    auto list = v.toOptionalTensorList();
    c10::List<std::optional<at::Tensor>> out;
    out.reserve(list.size());
    for (std::optional<at::Tensor> t : list) {
      if (t.has_value() && t->defined())
        out.push_back(alias_arg(st, *t, e));
      else
        out.push_back(t);
    }
    v = out;
  }
}

const Aliased* find_alias_impl(const CallState& st, const c10::TensorImpl* impl) {
  for (const auto& a : st.tensors)
    if (a.alias.unsafeGetTensorImpl() == impl ||
        (a.promoted.defined() && a.promoted.unsafeGetTensorImpl() == impl))
      return &a;
  return nullptr;
}

const Aliased* find_alias_storage(const CallState& st, const c10::StorageImpl* s) {
  for (const auto& a : st.tensors)
    if (a.alias.storage().unsafeGetStorageImpl() == s) return &a;
  return nullptr;
}

at::Tensor to_neuron_output(
    CallState& st, const at::Tensor& out, const OpEntry& e,
    c10::SmallVector<std::pair<const c10::StorageImpl*, c10::Storage>, 4>& fresh, bool upcast) {
  if (!out.defined() || out.device().type() == kNeuron) return out;
  TORCH_CHECK(out.layout() == c10::kStrided, "neuron: ", e.name, " produced a ", out.layout(),
              " tensor, but torch.sparse / torch.nested tensors are not supported on the neuron "
              "device; run this op on CPU tensors (or convert with .to_dense()).");
  if (!out.device().is_cpu()) return out;
  if (const Aliased* a = find_alias_impl(st, out.unsafeGetTensorImpl())) return a->original;
  if (!out.has_storage()) return out;
  const c10::StorageImpl* s = out.storage().unsafeGetStorageImpl();
  if (const Aliased* a = find_alias_storage(st, s))
    return view_of_storage(a->original.storage(), out);
  // A fresh float32 result of float64 arithmetic run in float32: cast back to float64.
  if (upcast && out.scalar_type() == at::kFloat) {
    at::Tensor up = out.to(at::kDouble);
    return adopt_host_tensor(up, st.device);
  }
  for (auto& [impl, storage] : fresh) {
    if (impl == s) {
      at::Tensor v = view_of_storage(storage, out);
      remember_host_alias(v, out);
      return v;
    }
  }
  at::Tensor n = adopt_host_tensor(out, st.device);
  remember_host_alias(n, out);  // the kernel's output already is n's host view
  fresh.emplace_back(s, n.storage());
  return n;
}

void warn_fallback(OpEntry& e) {
  e.fell_back.store(true, std::memory_order_relaxed);
  TORCH_CHECK(!strict(), "Operator '", e.name,
              "' is not native on Neuron and would run via CPU "
              "fallback, which TORCH_NEURONX_STRICT=1 forbids (",
              e.facts.reason,
              "). Run it on CPU tensors explicitly, or unset TORCH_NEURONX_STRICT.");
  if (!e.warned.exchange(true)) {
    TORCH_WARN("Operator '", e.name, "' executed via CPU fallback on the neuron device (",
               e.facts.reason,
               "). Inputs and outputs move through host memory; see "
               "torch_neuronx.get_fallback_ops().");
  }
}

std::atomic<bool> g_warned_f64{false};

// For random CPU kernels that draw from the default CPU generator internally (e.g. dropout):
// lends it the neuron device's generator state for the guard's lifetime, then takes the
// advanced state back and restores the CPU generator.
struct LentCpuGenerator {
  explicit LentCpuGenerator(int device)
      : cpu_(at::detail::getDefaultCPUGenerator().get<at::CPUGeneratorImpl>()),
        dev_(host_generator_for(std::nullopt, device).get<at::CPUGeneratorImpl>()) {
    std::lock_guard<std::mutex> l(cpu_->mutex_);
    saved_ = cpu_->engine();
    cpu_->set_engine(dev_->engine());
  }
  ~LentCpuGenerator() {
    std::lock_guard<std::mutex> l(cpu_->mutex_);
    dev_->set_engine(cpu_->engine());
    cpu_->set_engine(saved_);
  }

 private:
  at::CPUGeneratorImpl* cpu_;
  at::CPUGeneratorImpl* dev_;
  at::mt19937 saved_;
};

void run_on_core(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  OpEntry& e = op_entry(op);
  if (C10_UNLIKELY(e.facts.status == OpStatus::Unsupported)) {
    TORCH_CHECK_NOT_IMPLEMENTED(false, "Operator '", e.name,
                                "' is not supported on the neuron "
                                "device: ",
                                e.facts.reason);
  }
  if (C10_UNLIKELY(e.facts.status == OpStatus::Fallback)) {
    warn_fallback(e);
  } else if (!e.executed.load(std::memory_order_relaxed)) {
    e.executed.store(true, std::memory_order_relaxed);
  }

  const auto& schema = op.schema();
  const size_t nargs = schema.arguments().size();
  const size_t base = stack->size() - nargs;
  const Plan& plan = plan_for(e, op, *stack, nargs);

  CallState st;
  for (size_t i = 0; i < nargs; ++i) alias_ivalue(st, (*stack)[base + i], e);
  if (st.device < 0) st.device = current_device();  // e.g. factory ops with device=neuron
  if (st.saw_cpu_nonscalar && !e.facts.mixed_device_ok)
    mixed_device_error(e, st.device, st.other_device);

  // float64 arithmetic runs in float32 on the NeuronCore (no fp64 engines).
  if (plan.downcast_f64) {
    // One warning per process, for tensors with data; 0-dim float64 bookkeeping (e.g.
    // GradScaler's scale.double().reciprocal()) is computed the same way without a warning.
    bool has_f64_data = false;
    for (size_t i = 0; i < nargs; ++i) {
      const auto& v = (*stack)[base + i];
      if (v.isTensor() && v.toTensor().defined() && v.toTensor().scalar_type() == at::kDouble &&
          v.toTensor().dim() > 0)
        has_f64_data = true;
    }
    if (has_f64_data && !g_warned_f64.exchange(true)) {
      TORCH_WARN("neuron: float64 arithmetic (first seen in ", e.name,
                 ") runs in float32 on the "
                 "NeuronCore and results are cast back to float64; expect float32 precision. "
                 "Copies of float64 tensors keep every bit. Use float32 to silence this warning.");
    }
    for (size_t i = 0; i < nargs; ++i) {
      auto& v = (*stack)[base + i];
      if (!v.isTensor()) continue;
      const at::Tensor& t = v.toTensor();
      if (!t.defined() || t.scalar_type() != at::kDouble) continue;
      const auto* info = schema.arguments()[i].alias_info();
      for (auto& a : st.tensors) {
        if (a.alias.unsafeGetTensorImpl() == t.unsafeGetTensorImpl()) {
          a.promoted = t.to(at::kFloat);
          a.written = info && info->isWrite();
          v = a.promoted;
          break;
        }
      }
    }
  }

  // Random ops draw from the neuron generator (via its host CPU generator).
  if (C10_UNLIKELY(e.random) && e.generator_arg >= 0) {
    auto& g = (*stack)[base + e.generator_arg];
    std::optional<at::Generator> gen;
    if (g.isGenerator()) gen = g.toGenerator();
    g = host_generator_for(gen, st.device);
  }
  {
    std::optional<LentCpuGenerator> lent;
    if (C10_UNLIKELY(e.random) && e.generator_arg < 0) lent.emplace(st.device);
    AllocRouteGuard routed(st.device);
    op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);
  }

  // Write-back for mutated arguments: float32 stand-ins, and geometry/storage changes made by
  // out= resizing through the alias.
  for (auto& a : st.tensors) {
    if (a.promoted.defined() && a.written) {
      at::Tensor& src = a.promoted;
      if (src.sizes() != a.alias.sizes()) a.alias.resize_(src.sizes());
      a.alias.copy_(src);
    }
    c10::StorageImpl* as = a.alias.storage().unsafeGetStorageImpl();
    c10::StorageImpl* ns = a.original.storage().unsafeGetStorageImpl();
    if (as->data() != ns->data() || as->nbytes() != ns->nbytes()) {
      adopt_storage_bytes(ns, as, st.device);
    }
    if (a.alias.sizes() != a.original.sizes() || a.alias.strides() != a.original.strides() ||
        a.alias.storage_offset() != a.original.storage_offset()) {
      a.original.unsafeGetTensorImpl()->set_sizes_and_strides(a.alias.sizes(), a.alias.strides(),
                                                              a.alias.storage_offset());
    }
  }

  const size_t nret = schema.returns().size();
  c10::SmallVector<std::pair<const c10::StorageImpl*, c10::Storage>, 4> fresh;
  for (size_t i = stack->size() - nret; i < stack->size(); ++i) {
    auto& v = (*stack)[i];
    if (v.isTensor()) {
      v = to_neuron_output(st, v.toTensor(), e, fresh, plan.downcast_f64);
    } else if (v.isTensorList()) {
      auto list = v.toTensorList();
      c10::List<at::Tensor> out;
      out.reserve(list.size());
      for (const at::Tensor& t : list)
        out.push_back(to_neuron_output(st, t, e, fresh, plan.downcast_f64));
      v = out;
    } else if (v.isList()) {
      auto list = v.toList();
      for (size_t j = 0; j < list.size(); ++j) {
        c10::IValue item = list.get(j);
        if (item.isTensor())
          list.set(j, to_neuron_output(st, item.toTensor(), e, fresh, plan.downcast_f64));
      }
    }
  }
}

[[noreturn]] void sparse_error(const c10::OperatorHandle& op, torch::jit::Stack*) {
  TORCH_CHECK_NOT_IMPLEMENTED(
      false,
      "Sparse tensors (torch.sparse) are not supported on the "
      "neuron device (",
      op.schema().name(),
      "). Keep sparse tensors on "
      "CPU, or convert them with .to_dense() before moving them to neuron.");
}
[[noreturn]] void nested_error(const c10::OperatorHandle& op, torch::jit::Stack*) {
  TORCH_CHECK_NOT_IMPLEMENTED(false,
                              "Nested tensors (torch.nested) are not supported on the "
                              "neuron device (",
                              op.schema().name(),
                              "). Pad to a dense tensor, "
                              "or keep nested tensors on CPU.");
}

}  // namespace

void run_whole_on_core(const std::vector<std::string>& names) {
  static auto* lib = new torch::Library(torch::Library::IMPL, "aten", c10::DispatchKey::PrivateUse1,
                                        __FILE__, __LINE__);
  for (const auto& name : names) {
    lib->impl(name.c_str(), torch::CppFunction::makeFromBoxedFunction<&run_on_core>());
  }
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&run_on_core>());
}
// Composite ops that would otherwise pick a device-specific path for PrivateUse1
// (convolution -> convolution_overrideable) or reject devices other than CPU/CUDA/XPU
// (mode.values): run them whole on the core instead.
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  for (const char* name :
       {"convolution", "convolution_backward", "_convolution", "_convolution.deprecated",
        "convolution_overrideable", "convolution_backward_overrideable", "mode.values"}) {
    m.impl(name, torch::CppFunction::makeFromBoxedFunction<&run_on_core>());
  }
}

TORCH_LIBRARY_IMPL(_, SparsePrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&sparse_error>());
}
TORCH_LIBRARY_IMPL(_, SparseCsrPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&sparse_error>());
}
TORCH_LIBRARY_IMPL(_, NestedTensorPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&nested_error>());
}

}  // namespace torch_neuronx
