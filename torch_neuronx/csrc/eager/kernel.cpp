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
#include "runtime/log.h"
#include "runtime/op_source.h"
#include "runtime/perf_hook.h"
#include "runtime/runtime.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/view_as_real.h>
#include <ATen/ops/where.h>
#include <c10/util/SmallVector.h>
#include <torch/library.h>
#include <cmath>
#include <unordered_map>

namespace torch_neuronx {
namespace {

struct Aliased {
  at::Tensor original;  // the neuron tensor the caller passed
  at::Tensor alias;     // its CPU alias handed to the kernel
  at::Tensor promoted;  // float32-precision copy handed to the kernel (64-bit float policy)
};

struct CallState {
  c10::SmallVector<Aliased, 8> tensors;
  // Device storage -> index of its first argument in `tensors`; filled only for calls with many
  // neuron arguments (foreach ops over a model's parameters), where scanning would be quadratic.
  std::unordered_map<const c10::StorageImpl*, size_t> by_storage;
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

const c10::StorageImpl* storage_of(const at::Tensor& t) {
  return t.unsafeGetTensorImpl()->unsafe_storage().unsafeGetStorageImpl();
}

// The first neuron argument of the call so far that lives on device storage `ns`, if any.
const Aliased* first_on_storage(CallState& st, const c10::StorageImpl* ns) {
  constexpr size_t kScan = 16;
  if (st.tensors.size() <= kScan) {
    for (const auto& prev : st.tensors)
      if (storage_of(prev.original) == ns) return &prev;
    return nullptr;
  }
  if (st.by_storage.empty())
    for (size_t i = 0; i < st.tensors.size(); ++i)
      st.by_storage.emplace(storage_of(st.tensors[i].original), i);
  auto it = st.by_storage.find(ns);
  return it == st.by_storage.end() ? nullptr : &st.tensors[it->second];
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
    // Arguments on one device storage get one host storage, as on CPU, so CPU's memory-overlap
    // checks fire (`x[1:].add_(x[:-1])`). Common path: one pointer comparison per earlier
    // neuron argument.
    const c10::StorageImpl* ns = storage_of(t);
    if (const Aliased* prev = first_on_storage(st, ns)) {
      if (prev->alias.storage().unsafeGetStorageImpl() != a.storage().unsafeGetStorageImpl())
        a = host_alias_on(t, prev->alias.storage());
    }
    st.tensors.push_back({t, a, at::Tensor()});
    if (!st.by_storage.empty()) st.by_storage.emplace(ns, st.tensors.size() - 1);
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

// ---- 64-bit floating point on the NeuronCore ----
// The NeuronCore has no float64 engine: TorchNeuron casts 64-bit inputs to 32 bits, computes,
// and casts results back. The emulator keeps PyTorch's dtype contract exactly by running CPU's
// kernel in the original dtypes (so result dtypes, type promotion, out= checks and argument
// validation are CPU's), on inputs rounded to float32 precision, and rounds every 64-bit
// floating result to float32 precision (values beyond float32's range become inf, as on the
// device). Only the kernel's internal intermediates keep 64 bits (see docs/eager.md).
bool is_wide_float(at::ScalarType s) { return s == at::kDouble || s == at::kComplexDouble; }

at::ScalarType narrow_of(at::ScalarType s) {
  return s == at::kDouble ? at::kFloat : at::kComplexFloat;
}

// A copy of `t` (same dtype, sizes, strides and storage offset) holding its values at float32
// precision.
at::Tensor rounded_copy(const at::Tensor& t) {
  const at::ScalarType wide = t.scalar_type();
  if (t.is_non_overlapping_and_dense()) return t.to(narrow_of(wide)).to(wide);
  // Expanded or strided views: round the storage they read, keeping the geometry.
  const int64_t elems = int64_t(t.storage().nbytes() / t.element_size());
  at::Tensor flat = at::empty({0}, t.options()).set_(t.storage(), 0, {elems}, {1});
  return flat.to(narrow_of(wide)).to(wide).as_strided(t.sizes(), t.strides(), t.storage_offset());
}

// Rounds a 64-bit floating result to float32 precision in place.
void round_in_place(const at::Tensor& t) {
  if (!t.defined() || !is_wide_float(t.scalar_type()) || t.numel() == 0) return;
  if (t.device().type() != c10::kCPU) return;
  if (at::has_internal_overlap(t) == at::MemOverlap::Yes) return;  // cannot be written per element
  at::Tensor n = t.to(narrow_of(t.scalar_type()));
  const_cast<at::Tensor&>(t).copy_(n);
}

// Selections decided by an argument keep every bit, like the selections of DATA_MOVEMENT
// (eager/op_policy.py): scatter_reduce/index_reduce with reduce="amax"/"amin" and
// segment_reduce (and its backward, which finds the element by equality) with "max"/"min" pick
// input elements, and vector norms of order +-inf pick an absolute value as `abs` gives it (exact
// for real tensors; |z| in 64 bits for complex ones, since abs is exempt too). Backward formulas
// find that element again by comparing abs(x) with the norm, with or without a dtype= argument.
bool selects_by_argument(const OpEntry& e, const c10::FunctionSchema& schema,
                         const torch::jit::Stack& stack, size_t base) {
  const bool reduce = e.name == "aten::scatter_reduce" || e.name == "aten::scatter_reduce_" ||
                      e.name == "aten::index_reduce" || e.name == "aten::index_reduce_" ||
                      e.name == "aten::segment_reduce" ||
                      e.name == "aten::_segment_reduce_backward";
  const bool norm = e.name == "aten::linalg_vector_norm" || e.name == "aten::norm" ||
                    e.name == "aten::_foreach_norm";
  if (!reduce && !norm) return false;
  const auto& args = schema.arguments();
  for (size_t i = 0; i < args.size(); ++i) {
    const auto& v = stack[base + i];
    if (reduce && args[i].name() == "reduce" && v.isString())
      return v.toStringRef() == "amax" || v.toStringRef() == "amin" || v.toStringRef() == "max" ||
             v.toStringRef() == "min";
    if (norm && (args[i].name() == "ord" || args[i].name() == "p") &&
        (v.isScalar() || v.isDouble()))
      return std::isinf(v.toScalar().toDouble());
  }
  return false;
}

// A mutated 64-bit argument. An in-place op's elements that it wrote hold float32-precision
// results; the ones it left alone keep their bits (index_add_, scatter_add_ or index_put_ with
// accumulate=True update a few rows of a large tensor), so `before` keeps the old values.
// out= arguments are results as a whole.
struct WrittenWide {
  at::Tensor t;
  at::Tensor before;
};

WrittenWide note_written_wide(const at::Tensor& t, bool is_out) {
  if (is_out || t.numel() == 0 || t.is_conj() || t.is_neg() ||
      at::has_internal_overlap(t) != at::MemOverlap::No)
    return {t, at::Tensor()};
  return {t, t.clone()};
}

// The element bits of a float64 tensor or of a complex128 tensor's real and imaginary parts.
at::Tensor element_bits(const at::Tensor& t) {
  return (t.is_complex() ? at::view_as_real(t) : t).view(at::kLong);
}

void round_written(const WrittenWide& w) {
  const at::Tensor& t = w.t;
  if (!w.before.defined() || t.sizes() != w.before.sizes() || t.is_conj() || t.is_neg()) {
    round_in_place(t);
    return;
  }
  at::Tensor changed = element_bits(t).ne(element_bits(w.before));
  at::Tensor now = t.is_complex() ? at::view_as_real(t) : t;
  at::Tensor rounded = now.to(at::kFloat).to(at::kDouble);
  now.copy_(at::where(changed, rounded, now));
}

at::Tensor to_neuron_output(
    CallState& st, const at::Tensor& out, const OpEntry& e,
    c10::SmallVector<std::pair<const c10::StorageImpl*, c10::Storage>, 4>& fresh, bool round_f32) {
  if (!out.defined() || out.device().type() == kNeuron) return out;
  TORCH_CHECK(out.layout() == c10::kStrided, "neuron: ", e.name, " produced a ", out.layout(),
              " tensor, but torch.sparse / torch.nested tensors are not supported on the neuron "
              "device; run this op on CPU tensors (or convert with .to_dense()).");
  if (!out.device().is_cpu()) return out;
  TORCH_CHECK_NOT_IMPLEMENTED(!out.is_quantized(), "neuron: ", e.name,
                              " produced a quantized tensor, but quantized tensors are not "
                              "supported on the neuron device; quantize and run quantized ops on "
                              "CPU tensors (see docs/eager.md, \"Dtype policy\").");
  if (const Aliased* a = find_alias_impl(st, out.unsafeGetTensorImpl())) return a->original;
  if (!out.has_storage()) return out;
  const c10::StorageImpl* s = out.storage().unsafeGetStorageImpl();
  if (const Aliased* a = find_alias_storage(st, s))
    return view_of_storage(a->original.storage(), out);
  // A fresh 64-bit floating result of arithmetic: float32 precision, CPU's dtype.
  if (round_f32) round_in_place(out);
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
  note_fallback_source(e.name);
  if (!e.warned.exchange(true)) {
    TORCH_WARN("Operator '", e.name, "' executed via CPU fallback on the neuron device (",
               e.facts.reason, ")", op_source_suffix(),
               ". Inputs and outputs move through host "
               "memory; see torch_neuronx.get_fallback_ops().");
  }
  if (log_enabled(kLogInfo)) {
    log_message(kLogInfo, "torch_neuronx.eager",
                "Operator '" + e.name + "' executed via CPU fallback" + op_source_suffix());
  }
}

std::atomic<bool> g_warned_f64{false};

// Random CPU kernels without a Generator argument draw from PyTorch's default CPU generator.
// Lending that generator the device's state for the call is not thread-safe: another thread
// drawing CPU random numbers meanwhile would draw from (and advance) the device's stream, and
// lose its own draws when the state is handed back. So each such op is run here with the
// device's generator passed explicitly. The ops that reach this path (random, with a CPU kernel,
// no Generator argument) are listed by tests/device/test_threads.py, which fails when PyTorch
// adds one.
bool run_random_without_generator(const OpEntry& e, torch::jit::Stack* stack, size_t nargs,
                                  int device) {
  const size_t base = stack->size() - nargs;
  if (e.name == "aten::native_dropout" && e.overload.empty()) {
    // The CPU kernel's computation (aten/src/ATen/native/Dropout.cpp: native_dropout_cpu),
    // drawing the mask from the device's generator.
    at::Tensor input = (*stack)[base].toTensor();
    const double p = (*stack)[base + 1].toDouble();
    const std::optional<bool> train = (*stack)[base + 2].toOptional<bool>();
    at::Tensor output, mask;
    if (input.numel() == 0) {
      output = input;
      mask = at::empty_like(input);
    } else if (!train.has_value() || *train) {
      const double p1m = 1. - p;
      const double scale = p1m == 0 ? 0. : 1. / p1m;  // p == 1: zeros, not NaN
      mask = at::empty_like(input, input.options().dtype(at::kBool), at::MemoryFormat::Contiguous);
      mask.bernoulli_(p1m, host_generator_for(std::nullopt, device));
      output = input.mul(mask).mul_(scale);
    } else {
      mask = at::ones_like(input, input.options().dtype(at::kBool));
      output = input.clone();
    }
    torch::jit::drop(*stack, nargs);
    stack->emplace_back(std::move(output));
    stack->emplace_back(std::move(mask));
    return true;
  }
  // Random-tagged ops that draw nothing on the CPU path (the CPU flash attention rejects
  // dropout; the SDPA backend choice draws nothing).
  if (e.name == "aten::_scaled_dot_product_flash_attention_for_cpu" ||
      e.name == "aten::_fused_sdp_choice")
    return false;
  TORCH_CHECK(false, "neuron: ", e.name,
              " is a random op without a generator argument that the driver does not know how "
              "to run with the device's generator (it would draw from the CPU default "
              "generator); run it on CPU tensors, and report it to torch-neuronx.");
}

void run_on_core_impl(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// With TORCH_NEURONX_ENABLE_STACK_TRACE=1, each op records its caller's source line, and an
// error raised while it runs names that line.
void run_on_core(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  if (C10_LIKELY(!op_source_tracking())) return run_on_core_impl(op, stack);
  OpSourceScope source(op.schema().name().c_str());
  try {
    run_on_core_impl(op, stack);
  } catch (c10::Error& err) {
    std::string src = current_op_source();
    if (!src.empty()) err.add_context("neuron op " + op.schema().name() + " called from " + src);
    throw;
  }
}

// The index of the first neuron tensor among an op's arguments (for error messages).
int neuron_device_of(const torch::jit::Stack& stack, size_t base, size_t nargs) {
  for (size_t i = 0; i < nargs; ++i) {
    const auto& v = stack[base + i];
    if (v.isTensor() && v.toTensor().defined() && v.toTensor().device().type() == kNeuron)
      return v.toTensor().device().index();
  }
  return current_device();
}

void run_on_core_impl(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  OpEntry& e = op_entry(op);
  if (C10_UNLIKELY(e.facts.status == OpStatus::Unsupported)) {
    TORCH_CHECK_NOT_IMPLEMENTED(false, "Operator '", e.name,
                                "' is not supported on the neuron "
                                "device: ",
                                e.facts.reason);
  }
  if (C10_UNLIKELY(e.facts.status == OpStatus::Fallback)) {
    warn_fallback(e);
  } else if (!e.executed.load(std::memory_order_relaxed) && !tracking_paused()) {
    e.executed.store(true, std::memory_order_relaxed);
  }

  const auto& schema = op.schema();
  const size_t nargs = schema.arguments().size();
  const size_t base = stack->size() - nargs;
  const Plan& plan = plan_for(e, op, *stack, nargs);

  // Performance model (torch_neuronx.perf): while somebody measures, keep the caller's
  // arguments (before they become host aliases) and report the op once it ran. Otherwise this
  // is one relaxed atomic load.
  const bool perf = perf_enabled();
  std::vector<c10::IValue> perf_args;
  if (C10_UNLIKELY(perf)) perf_args.assign(stack->begin() + base, stack->end());

  // A CPU scalar may be read by an op on neuron tensors, never written (as on an accelerator):
  // an out= or in-place argument on another device is an error, not a resized host tensor.
  if (!e.facts.mixed_device_ok) {
    for (size_t i = 0; i < nargs; ++i) {
      const auto* info = schema.arguments()[i].alias_info();
      if (!info || !info->isWrite()) continue;
      const auto& v = (*stack)[base + i];
      auto check = [&](const at::Tensor& t) {
        if (t.defined() && t.device().type() != kNeuron)
          mixed_device_error(e, neuron_device_of(*stack, base, nargs), t.device());
      };
      if (v.isTensor()) check(v.toTensor());
      if (v.isTensorList())
        for (const at::Tensor& t : v.toTensorList()) check(t);
    }
  }

  CallState st;
  for (size_t i = 0; i < nargs; ++i) alias_ivalue(st, (*stack)[base + i], e);
  if (st.device < 0) st.device = current_device();  // e.g. factory ops with device=neuron
  if (st.saw_cpu_nonscalar && !e.facts.mixed_device_ok)
    mixed_device_error(e, st.device, st.other_device);
  // 64-bit floating arithmetic has float32 precision on the NeuronCore (no fp64 engines).
  c10::SmallVector<WrittenWide, 4> written_wide;  // mutated 64-bit arguments, rounded afterwards
  const bool round_f32 =
      C10_UNLIKELY(plan.round_f32) && !selects_by_argument(e, schema, *stack, base);
  if (round_f32) {
    // One warning per process, for tensors with data; 0-dim float64 bookkeeping (e.g.
    // GradScaler's scale.double().reciprocal()) is computed the same way without a warning.
    bool has_f64_data = false;
    for (size_t i = 0; i < nargs; ++i) {
      const auto& v = (*stack)[base + i];
      if (v.isTensor() && v.toTensor().defined() && is_wide_float(v.toTensor().scalar_type()) &&
          v.toTensor().dim() > 0)
        has_f64_data = true;
    }
    if (has_f64_data && !g_warned_f64.exchange(true)) {
      TORCH_WARN("neuron: float64/complex128 arithmetic (first seen in ", e.name,
                 ") runs in float32 on the NeuronCore: results keep their float64/complex128 "
                 "dtype with float32 precision. Copies of float64 tensors keep every bit. Use "
                 "float32 to silence this warning.");
    }
    // Storages the op writes: an input sharing one is read as is (a rounded copy would hide
    // the overlap from CPU's checks and from the kernel).
    c10::SmallVector<const c10::StorageImpl*, 4> written_storages;
    for (size_t i = 0; i < nargs; ++i) {
      const auto* info = schema.arguments()[i].alias_info();
      if (!info || !info->isWrite()) continue;
      const auto& v = (*stack)[base + i];
      auto note = [&](const at::Tensor& t) {
        if (!t.defined()) return;
        if (t.has_storage()) written_storages.push_back(t.storage().unsafeGetStorageImpl());
        if (is_wide_float(t.scalar_type()))
          written_wide.push_back(note_written_wide(t, schema.arguments()[i].is_out()));
      };
      if (v.isTensor()) note(v.toTensor());
      if (v.isTensorList())
        for (const at::Tensor& t : v.toTensorList()) note(t);
    }
    auto written = [&](const at::Tensor& t) {
      if (!t.has_storage()) return false;
      for (auto* ws : written_storages)
        if (ws == t.storage().unsafeGetStorageImpl()) return true;
      return false;
    };
    for (size_t i = 0; i < nargs; ++i) {
      auto& v = (*stack)[base + i];
      if (!v.isTensor()) continue;
      const at::Tensor& t = v.toTensor();
      if (!t.defined() || !is_wide_float(t.scalar_type()) || t.numel() == 0 || written(t)) continue;
      for (auto& a : st.tensors) {
        if (a.alias.unsafeGetTensorImpl() == t.unsafeGetTensorImpl()) {
          a.promoted = rounded_copy(t);
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
  const int64_t perf_t0 = C10_UNLIKELY(perf) ? perf_now_ns() : 0;
  {
    // Host memory the kernel allocates is workspace until its outputs are adopted below.
    AllocRouteGuard routed(st.device);
    if (!(C10_UNLIKELY(e.random) && e.generator_arg < 0 &&
          run_random_without_generator(e, stack, nargs, st.device)))
      op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);
  }
  const int64_t perf_host_ns = C10_UNLIKELY(perf) ? perf_now_ns() - perf_t0 : 0;

  // Mutated 64-bit arguments hold float32-precision results, like fresh ones.
  for (const WrittenWide& w : written_wide) round_written(w);

  // Write-back for geometry/storage changes made by out= resizing through the alias.
  for (auto& a : st.tensors) {
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
      v = to_neuron_output(st, v.toTensor(), e, fresh, round_f32);
    } else if (v.isTensorList()) {
      auto list = v.toTensorList();
      c10::List<at::Tensor> out;
      out.reserve(list.size());
      for (const at::Tensor& t : list) out.push_back(to_neuron_output(st, t, e, fresh, round_f32));
      v = out;
    } else if (v.isList()) {
      auto list = v.toList();
      for (size_t j = 0; j < list.size(); ++j) {
        c10::IValue item = list.get(j);
        if (item.isTensor())
          list.set(j, to_neuron_output(st, item.toTensor(), e, fresh, round_f32));
      }
    }
  }
  if (C10_UNLIKELY(perf)) {
    report_op(e.overload.empty() ? e.name : e.name + "." + e.overload, st.device, perf_args,
              stack->data() + (stack->size() - nret), nret, perf_host_ns,
              e.facts.status == OpStatus::Fallback);
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
[[noreturn]] void quantized_error(const c10::OperatorHandle& op, torch::jit::Stack*) {
  TORCH_CHECK_NOT_IMPLEMENTED(false, "Quantized tensors are not supported on the neuron device (",
                              op.schema().name(),
                              "). Keep quantized tensors and quantized ops on CPU.");
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

void run_on_core_boxed(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  run_on_core(op, stack);
}

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
// (mode.values): run them whole on the core instead. (convolution_backward too, through
// conv_backward.cpp, which routes one oneDNN defect around.)
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  for (const char* name :
       {"convolution", "_convolution", "_convolution.deprecated", "convolution_overrideable",
        "convolution_backward_overrideable", "mode.values"}) {
    m.impl(name, torch::CppFunction::makeFromBoxedFunction<&run_on_core>());
  }
}

TORCH_LIBRARY_IMPL(_, SparsePrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&sparse_error>());
}
TORCH_LIBRARY_IMPL(_, SparseCsrPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&sparse_error>());
}
TORCH_LIBRARY_IMPL(_, QuantizedPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&quantized_error>());
}
TORCH_LIBRARY_IMPL(_, NestedTensorPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&nested_error>());
}

}  // namespace torch_neuronx
