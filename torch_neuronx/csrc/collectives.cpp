// PrivateUse1 (neuron) kernels of the four hottest c10d dispatcher ops: allreduce_,
// _allgather_base_, _reduce_scatter_base_ and broadcast_ (DDP buckets, FSDP2 shards,
// parameter broadcast). They do what torch's own CPU kernels in c10d/Ops.cpp do, on the
// host aliases of the neuron tensors: gloo reads and writes device memory in place.
//
// Why C++: the Python kernels (torch_neuronx/distributed/backend.py) cost ~0.1 ms per call
// in the dispatcher's Python-kernel path, ~10% of a 1 MiB all_reduce on loopback. The other
// c10d ops stay Python (rarely hot; they re-dispatch on a host shadow group).
//
// PREMUL_SUM (gloo lacks it) runs as SUM over pre-scaled data; here the scale factor is read
// from the ReduceOp's supplement, which Python cannot see.
#include "host_alias.h"
#include "sync.h"

#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/library.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace torch_neuronx {
namespace {

using c10d::ProcessGroup;
using c10d::ReduceOp;
using c10d::Work;
using PGPtr = c10::intrusive_ptr<ProcessGroup>;
using OpPtr = c10::intrusive_ptr<ReduceOp>;
using WorkPtr = c10::intrusive_ptr<Work>;

// Device work producing the inputs must be finished before gloo reads the bytes.
void sync_devices_of(at::TensorList tensors) {
  for (const auto& t : tensors) {
    if (t.defined() && t.device().type() == c10::DeviceType::PrivateUse1) {
      synchronize_device(t.device().index());
      return;
    }
  }
}

std::vector<at::Tensor> aliases(at::TensorList tensors) {
  std::vector<at::Tensor> out;
  out.reserve(tensors.size());
  for (const auto& t : tensors) out.push_back(host_alias(t));
  return out;
}

const char* kNoNeuronBackendHint =
    "neuron tensors need a process group with the neuron backend: "
    "init_process_group('neuron') or init_process_group('cpu:gloo,neuron:neuron') (or pass "
    "backend= to new_group), or move the tensors to CPU for a gloo-only group.";

c10::intrusive_ptr<c10d::Backend> neuron_backend(const PGPtr& pg) {
  try {
    return pg->getBackend(c10::DeviceType::PrivateUse1);
  } catch (const c10::Error& e) {
    TORCH_CHECK(false, e.what_without_backtrace(), " (", kNoNeuronBackendHint, ")");
  }
}

// The factor of a PREMUL_SUM op as a scalar or a host tensor (one element).
struct PremulFactor {
  bool is_tensor = false;
  double scalar = 0.0;
  at::Tensor tensor;
};

PremulFactor premul_factor(const ReduceOp& op) {
  auto* sup = dynamic_cast<c10d::PreMulSumSupplement*>(op.supplement_.get());
  TORCH_CHECK(sup != nullptr,
              "neuron backend: ReduceOp.PREMUL_SUM reached the neuron kernel without its scale "
              "factor; build it with torch.distributed._make_nccl_premul_sum(factor).");
  PremulFactor f;
  if (sup->tensor_factor.defined()) {
    f.is_tensor = true;
    f.tensor = host_alias(sup->tensor_factor);
  } else {
    f.scalar = sup->double_factor;
  }
  return f;
}

void scale_(at::Tensor& t, const PremulFactor& f) {
  if (f.is_tensor) t.mul_(f.tensor); else t.mul_(f.scalar);
}

at::Tensor scaled(const at::Tensor& t, const PremulFactor& f) {
  return f.is_tensor ? t.mul(f.tensor) : t.mul(f.scalar);
}

// ReduceOp handed to gloo: PREMUL_SUM becomes SUM (the caller has pre-scaled the data).
ReduceOp gloo_op(const ReduceOp& op) {
  return op.op_ == ReduceOp::PREMUL_SUM ? ReduceOp(ReduceOp::SUM) : op;
}

std::tuple<std::vector<at::Tensor>, WorkPtr> allreduce_neuron(
    at::TensorList tensors, const PGPtr& pg, const OpPtr& op,
    const std::optional<at::Tensor>& sparse_indices, bool async_op, int64_t timeout) {
  TORCH_CHECK(!sparse_indices.has_value(),
              "neuron backend: sparse all_reduce is not supported (sparse tensors are not "
              "supported on neuron); densify the tensor first.");
  sync_devices_of(tensors);
  auto host = aliases(tensors);
  if (op->op_ == ReduceOp::PREMUL_SUM) {
    auto f = premul_factor(*op);
    for (auto& t : host) scale_(t, f);  // all_reduce updates its input in place anyway
  }
  c10d::AllreduceOptions opts;
  opts.reduceOp = gloo_op(*op);
  opts.timeout = std::chrono::milliseconds(timeout);
  opts.asyncOp = async_op;
  auto work = neuron_backend(pg)->allreduce(host, opts);
  return {tensors.vec(), work};
}

std::tuple<at::Tensor, WorkPtr> allgather_base_neuron(
    at::Tensor& output, at::Tensor& input, const PGPtr& pg, bool async_op, int64_t timeout) {
  sync_devices_of({output, input});
  auto out = host_alias(output);
  auto in = host_alias(input);
  c10d::AllgatherOptions opts;
  opts.timeout = std::chrono::milliseconds(timeout);
  opts.asyncOp = async_op;
  auto work = neuron_backend(pg)->_allgather_base(out, in, opts);
  return {output, work};
}

std::tuple<at::Tensor, WorkPtr> reduce_scatter_base_neuron(
    at::Tensor& output, at::Tensor& input, const PGPtr& pg, const OpPtr& op, bool async_op,
    int64_t timeout) {
  sync_devices_of({output, input});
  auto out = host_alias(output);
  auto in = host_alias(input);
  if (op->op_ == ReduceOp::PREMUL_SUM) {
    in = scaled(in, premul_factor(*op));  // the input must stay untouched: staging copy
  }
  c10d::ReduceScatterOptions opts;
  opts.reduceOp = gloo_op(*op);
  opts.timeout = std::chrono::milliseconds(timeout);
  opts.asyncOp = async_op;
  auto work = neuron_backend(pg)->_reduce_scatter_base(out, in, opts);
  return {output, work};
}

std::tuple<std::vector<at::Tensor>, WorkPtr> broadcast_neuron(
    at::TensorList tensors, const PGPtr& pg, int64_t root_rank, int64_t root_tensor,
    bool async_op, int64_t timeout) {
  sync_devices_of(tensors);
  auto host = aliases(tensors);
  c10d::BroadcastOptions opts;
  opts.rootRank = root_rank;
  opts.rootTensor = root_tensor;
  opts.timeout = std::chrono::milliseconds(timeout);
  opts.asyncOp = async_op;
  auto work = neuron_backend(pg)->broadcast(host, opts);
  return {tensors.vec(), work};
}

// Drops the dispatcher's "Overriding a previously registered kernel" warning while our
// kernels replace the forwarding PrivateUse1 kernels torch's Ops.cpp registers (expected);
// every other warning goes to the previous handler.
class DropOverrideWarnings : public c10::WarningHandler {
 public:
  explicit DropOverrideWarnings(c10::WarningHandler* prev) : prev_(prev) {}
  void process(const c10::Warning& w) override {
    const std::string& msg = w.msg();
    if (msg.find("Overriding a previously registered kernel") != std::string::npos ||
        msg.find("Warning only once for all operators") != std::string::npos) {
      return;
    }
    prev_->process(w);
  }

 private:
  c10::WarningHandler* prev_;
};

}  // namespace

// Registers the C++ kernels (once; later calls are no-ops). Called from the distributed
// layer's register(), after its Python kernels for the other c10d ops.
void register_c10d_kernels() {
  static std::once_flag once;
  std::call_once(once, [] {
    DropOverrideWarnings drop(c10::WarningUtils::get_warning_handler());
    c10::WarningUtils::WarningHandlerGuard guard(&drop);
    // Leaked on purpose: the registrations must outlive every process group (and the
    // interpreter's shutdown order), like TORCH_LIBRARY_IMPL's static registrations.
    auto* lib = new torch::Library(torch::Library::IMPL, "c10d", c10::DispatchKey::PrivateUse1,
                                   __FILE__, __LINE__);
    lib->impl("allreduce_", TORCH_FN(allreduce_neuron));
    lib->impl("_allgather_base_", TORCH_FN(allgather_base_neuron));
    lib->impl("_reduce_scatter_base_", TORCH_FN(reduce_scatter_base_neuron));
    lib->impl("broadcast_", TORCH_FN(broadcast_neuron));
  });
}

}  // namespace torch_neuronx
