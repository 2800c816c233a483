// PrivateUse1 (neuron) kernels of every c10d dispatcher op that torch routes by device
// (all_reduce, all_gather, reduce_scatter, broadcast, reduce, gather, scatter, all_to_all,
// barrier, send/recv and their coalesced and tensor forms). Each does what torch's own CPU
// kernel in c10d/Ops.cpp does, on the host views of the neuron tensors (host_alias: the same
// bytes, no copy), with the group's neuron backend, a ProcessGroupGloo: gloo reads and writes
// device memory in place, and the kernel returns gloo's own Work (its errors, its
// asynchrony, its future yielding the host views of the outputs).
//
// Why C++ and not Python kernels: a Python kernel costs ~0.1 ms per call in the dispatcher's
// Python-kernel path (~10% of a 1 MiB all_reduce on loopback), and only C++ sees the
// PREMUL_SUM scale factor (the ReduceOp's supplement). See docs/distributed.md.
//
// Every kernel asks gloo for its work with the calling thread's Python objects taken out of
// its thread-local state (WorkWithoutPythonTLS below): the fix of a deadlock at exit of DDP
// scripts (docs/distributed.md, "Known issues"; docs/decisions.md).
//
// monitored_barrier_ has no neuron kernel: ProcessGroup::monitoredBarrier always dispatches
// it with a CPU tensor (as for CUDA), so the group's CPU backend serves it.
#include "runtime/host_alias.h"
#include "runtime/perf_hook.h"
#include "runtime/sync.h"

#include <ATen/ThreadLocalPythonObjects.h>
#include <c10/util/Exception.h>
#include <torch/library.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <algorithm>
#include <chrono>
#include <exception>
#include <mutex>
#include <optional>
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
using TensorLists = std::vector<std::vector<at::Tensor>>;

// Host views of one kernel's tensors. The first neuron tensor met synchronises its device:
// device work producing the data must be finished before gloo reads or writes the bytes (a
// process drives one core, so one device per call).
//
// It also reports the collective to the performance model (torch_neuronx.perf) while somebody
// measures: when the kernel returns (after it issued the work), with the size of the largest
// tensor set it viewed -- the whole tensor for all_reduce/broadcast/send/recv, the gathered
// output for all_gather, the unscattered input for reduce_scatter (what the model's nbytes
// means) -- and the group's name, size and rank (`peer`: the other rank of send/recv).
class HostViews {
 public:
  HostViews(const char* collective, const PGPtr& pg, int64_t peer = -1)
      : collective_(collective), pg_(pg), peer_(peer) {}
  ~HostViews() {
    if (C10_LIKELY(!perf_enabled()) || std::uncaught_exceptions() > 0 || device_ < 0) return;
    try {
      report_op(std::string("c10d::") + collective_, device_,
                {c10::IValue(bytes_), c10::IValue(pg_->getGroupName()),
                 c10::IValue(int64_t(pg_->getSize())), c10::IValue(int64_t(pg_->getRank())),
                 c10::IValue(peer_)},
                nullptr, 0, 0, false);
    } catch (const std::exception& e) {  // never throw from a destructor
      TORCH_WARN("torch_neuronx.perf: could not cost ", collective_, ": ", e.what());
    }
  }
  at::Tensor of(const at::Tensor& t) {
    note(size_of(t));
    return view(t);
  }
  std::vector<at::Tensor> of(at::TensorList ts) {
    std::vector<at::Tensor> out;
    out.reserve(ts.size());
    int64_t total = 0;
    for (const auto& t : ts) {
      out.push_back(view(t));
      total += size_of(t);
    }
    note(total);
    return out;
  }
  TensorLists of(const TensorLists& lists) {
    TensorLists out;
    out.reserve(lists.size());
    int64_t total = 0;
    for (const auto& l : lists) {
      std::vector<at::Tensor> views;
      views.reserve(l.size());
      for (const auto& t : l) {
        views.push_back(view(t));
        total += size_of(t);
      }
      out.push_back(std::move(views));
    }
    note(total);
    return out;
  }

 private:
  at::Tensor view(const at::Tensor& t) {
    if (t.defined() && t.device().type() == c10::DeviceType::PrivateUse1) {
      if (device_ < 0) device_ = t.device().index();
      if (!synced_) {
        synchronize_device(t.device().index());
        synced_ = true;
      }
    }
    return host_alias(t);
  }
  static int64_t size_of(const at::Tensor& t) {
    return t.defined() ? int64_t(t.numel()) * int64_t(t.element_size()) : 0;
  }
  void note(int64_t bytes) { bytes_ = std::max(bytes_, bytes); }

  const char* collective_;
  const PGPtr& pg_;
  int64_t peer_;
  bool synced_ = false;
  int device_ = -1;
  int64_t bytes_ = 0;
};

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

// Scope in which a kernel asks gloo for its work: the Python objects stashed in the calling
// thread's thread-local state (at::impl::ThreadLocalPythonObjects) are set aside, and put back
// when the scope ends, before the kernel returns.
//
// Why: gloo's work (ProcessGroupGloo::AsyncWork::tls_, and Work's profiler callbacks) snapshots
// its creator's whole at::ThreadLocalState, to run the collective under it on a gloo worker
// thread. During backward that state holds a Python object: the contextvars context that
// torch/autograd/graph.py `_engine_run_backward` stashes (`_stash_obj_in_tls("context", ...)`)
// for the autograd engine's device threads. Once backward has returned and the stash is erased,
// the work can be that object's last owner: the worker drops the finished work and the decref
// (c10::SafePyObject's destructor) waits for the GIL. If the main thread, holding the GIL, is
// destroying the group at that moment -- DDP's Reducer drops the last reference to the
// ProcessGroup when the model is freed (its Python binding keeps the GIL, unlike ProcessGroup's
// and Work's), and ~ProcessGroupGloo waits for the works in flight and joins the workers --
// neither thread moves: the hang at exit of DDP scripts (gdb: the worker in ~AsyncWork ->
// SafePyObject -> take_gil, the main thread in ~Reducer -> ~ProcessGroupGloo -> thread::join).
//
// What anyone observes is unchanged: the snapshot only runs gloo's C++ collective on the worker,
// where no Python runs and nothing reads the stash; the calling thread (the hook, the contextvars
// it sees) gets its stash back before the kernel returns. The rest of the snapshot is kept as
// is (Python dispatch modes in it see the aten calls gloo makes on the worker, as with CPU
// tensors on gloo). Moving the shared_ptrs around runs no Python destructor.
class WorkWithoutPythonTLS {
 public:
  WorkWithoutPythonTLS() : saved_(at::impl::ThreadLocalPythonObjects::get_state()) {
    at::impl::ThreadLocalPythonObjects::set_state({});
  }
  ~WorkWithoutPythonTLS() { at::impl::ThreadLocalPythonObjects::set_state(std::move(saved_)); }
  WorkWithoutPythonTLS(const WorkWithoutPythonTLS&) = delete;
  WorkWithoutPythonTLS& operator=(const WorkWithoutPythonTLS&) = delete;

 private:
  at::impl::ThreadLocalPythonObjects saved_;
};

// Asks the group's neuron backend for a work, in a WorkWithoutPythonTLS scope.
template <typename Issue>
WorkPtr issue(const PGPtr& pg, Issue&& ask) {
  auto backend = neuron_backend(pg);
  WorkWithoutPythonTLS no_python_objects;
  return ask(*backend);
}

// PREMUL_SUM (gloo lacks it) runs as SUM over pre-scaled data. Its factor, a scalar or a
// one-element tensor, lives in the ReduceOp's supplement.
class Premul {
 public:
  // Unset unless `op` is PREMUL_SUM.
  Premul(const ReduceOp& op, HostViews& host) {
    if (op.op_ != ReduceOp::PREMUL_SUM) return;
    auto* sup = dynamic_cast<c10d::PreMulSumSupplement*>(op.supplement_.get());
    TORCH_CHECK(sup != nullptr,
                "neuron backend: ReduceOp.PREMUL_SUM reached the neuron kernel without its "
                "scale factor; build it with torch.distributed._make_nccl_premul_sum(factor).");
    active_ = true;
    if (sup->tensor_factor.defined()) {
      tensor_ = host.of(sup->tensor_factor);
    } else {
      scalar_ = sup->double_factor;
    }
  }

  // For ops that update their input in place anyway (all_reduce, reduce).
  void scale_in_place(std::vector<at::Tensor>& ts) const {
    if (!active_) return;
    for (auto& t : ts) tensor_.defined() ? t.mul_(tensor_) : t.mul_(scalar_);
  }

  // For ops whose input must stay untouched (reduce_scatter): scaled staging copies.
  at::Tensor scaled(const at::Tensor& t) const {
    if (!active_) return t;
    return tensor_.defined() ? t.mul(tensor_) : t.mul(scalar_);
  }
  std::vector<at::Tensor> scaled(std::vector<at::Tensor> ts) const {
    for (auto& t : ts) t = scaled(t);
    return ts;
  }
  TensorLists scaled(TensorLists lists) const {
    for (auto& l : lists) l = scaled(std::move(l));
    return lists;
  }

  // The op handed to gloo: SUM once the data is pre-scaled.
  static ReduceOp for_gloo(const ReduceOp& op) {
    return op.op_ == ReduceOp::PREMUL_SUM ? ReduceOp(ReduceOp::SUM) : op;
  }

 private:
  bool active_ = false;
  double scalar_ = 0.0;
  at::Tensor tensor_;
};

// The c10d options struct `Options` with the fields every kernel's arguments set: asyncOp,
// and timeout when the op carries one (the coalesced all-gathers do not: the backend's own
// timeout applies).
template <typename Options>
Options options(bool async_op, std::optional<int64_t> timeout) {
  Options opts;
  if (timeout) opts.timeout = std::chrono::milliseconds(*timeout);
  opts.asyncOp = async_op;
  return opts;
}

// ... and the reduce op handed to gloo, for the reducing collectives.
template <typename Options>
Options reduce_options(const ReduceOp& op, bool async_op, int64_t timeout) {
  auto opts = options<Options>(async_op, timeout);
  opts.reduceOp = Premul::for_gloo(op);
  return opts;
}

// ---- reducing collectives

std::tuple<std::vector<at::Tensor>, WorkPtr> allreduce_neuron(
    at::TensorList tensors, const PGPtr& pg, const OpPtr& op,
    const std::optional<at::Tensor>& sparse_indices, bool async_op, int64_t timeout) {
  TORCH_CHECK(!sparse_indices.has_value(),
              "neuron backend: sparse all_reduce is not supported (sparse tensors are not "
              "supported on neuron); densify the tensor first.");
  HostViews host("all_reduce", pg);
  auto data = host.of(tensors);
  Premul(*op, host).scale_in_place(data);
  auto work = issue(pg, [&](c10d::Backend& gloo) {
    return gloo.allreduce(data, reduce_options<c10d::AllreduceOptions>(*op, async_op, timeout));
  });
  return {tensors.vec(), work};
}

WorkPtr allreduce_coalesced_neuron(at::TensorList tensors, const PGPtr& pg, const OpPtr& op,
                                   bool async_op, int64_t timeout) {
  HostViews host("all_reduce", pg);
  auto data = host.of(tensors);
  Premul(*op, host).scale_in_place(data);
  return issue(pg, [&](c10d::Backend& gloo) {
    return gloo.allreduce_coalesced(
        data, reduce_options<c10d::AllreduceCoalescedOptions>(*op, async_op, timeout));
  });
}

WorkPtr reduce_neuron(at::TensorList tensors, const PGPtr& pg, const OpPtr& op, int64_t root_rank,
                      int64_t root_tensor, bool async_op, int64_t timeout) {
  HostViews host("reduce", pg);
  auto data = host.of(tensors);
  Premul(*op, host).scale_in_place(data);
  auto opts = reduce_options<c10d::ReduceOptions>(*op, async_op, timeout);
  opts.rootRank = root_rank;
  opts.rootTensor = root_tensor;
  return issue(pg, [&](c10d::Backend& gloo) { return gloo.reduce(data, opts); });
}

std::tuple<std::vector<at::Tensor>, WorkPtr> reduce_scatter_neuron(const at::TensorList& outputs,
                                                                   const TensorLists& inputs,
                                                                   const PGPtr& pg, const OpPtr& op,
                                                                   bool async_op, int64_t timeout) {
  HostViews host("reduce_scatter", pg);
  auto out = host.of(outputs);
  auto in = host.of(inputs);
  in = Premul(*op, host).scaled(std::move(in));
  auto work = issue(pg, [&](c10d::Backend& gloo) {
    return gloo.reduce_scatter(out, in,
                               reduce_options<c10d::ReduceScatterOptions>(*op, async_op, timeout));
  });
  return {outputs.vec(), work};
}

std::tuple<at::Tensor, WorkPtr> reduce_scatter_base_neuron(at::Tensor& output, at::Tensor& input,
                                                           const PGPtr& pg, const OpPtr& op,
                                                           bool async_op, int64_t timeout) {
  HostViews host("reduce_scatter", pg);
  auto out = host.of(output);
  auto in = Premul(*op, host).scaled(host.of(input));
  auto work = issue(pg, [&](c10d::Backend& gloo) {
    return gloo._reduce_scatter_base(
        out, in, reduce_options<c10d::ReduceScatterOptions>(*op, async_op, timeout));
  });
  return {output, work};
}

WorkPtr reduce_scatter_tensor_coalesced_neuron(at::TensorList outputs, at::TensorList inputs,
                                               const PGPtr& pg, const OpPtr& op, bool async_op,
                                               int64_t timeout) {
  HostViews host("reduce_scatter", pg);
  auto out = host.of(outputs);
  auto in = Premul(*op, host).scaled(host.of(inputs));
  return issue(pg, [&](c10d::Backend& gloo) {
    return gloo.reduce_scatter_tensor_coalesced(
        out, in, reduce_options<c10d::ReduceScatterOptions>(*op, async_op, timeout));
  });
}

// ---- data movement

std::tuple<TensorLists, WorkPtr> allgather_neuron(const TensorLists& outputs, at::TensorList inputs,
                                                  const PGPtr& pg, bool async_op, int64_t timeout) {
  HostViews host("all_gather", pg);
  auto out = host.of(outputs);
  auto in = host.of(inputs);
  auto work = issue(pg, [&](c10d::Backend& gloo) {
    return gloo.allgather(out, in, options<c10d::AllgatherOptions>(async_op, timeout));
  });
  return {outputs, work};
}

std::tuple<at::Tensor, WorkPtr> allgather_base_neuron(at::Tensor& output, at::Tensor& input,
                                                      const PGPtr& pg, bool async_op,
                                                      int64_t timeout) {
  HostViews host("all_gather", pg);
  auto out = host.of(output);
  auto in = host.of(input);
  auto work = issue(pg, [&](c10d::Backend& gloo) {
    return gloo._allgather_base(out, in, options<c10d::AllgatherOptions>(async_op, timeout));
  });
  return {output, work};
}

WorkPtr allgather_coalesced_neuron(const TensorLists& outputs, const at::TensorList& inputs,
                                   const PGPtr& pg, bool async_op) {
  HostViews host("all_gather", pg);
  auto out = host.of(outputs);
  auto in = host.of(inputs);
  return issue(pg, [&](c10d::Backend& gloo) {
    return gloo.allgather_coalesced(out, in,
                                    options<c10d::AllgatherOptions>(async_op, std::nullopt));
  });
}

WorkPtr allgather_into_tensor_coalesced_neuron(at::TensorList outputs, at::TensorList inputs,
                                               const PGPtr& pg, bool async_op) {
  HostViews host("all_gather", pg);
  auto out = host.of(outputs);
  auto in = host.of(inputs);
  return issue(pg, [&](c10d::Backend& gloo) {
    return gloo.allgather_into_tensor_coalesced(
        out, in, options<c10d::AllgatherOptions>(async_op, std::nullopt));
  });
}

std::tuple<std::vector<at::Tensor>, WorkPtr> broadcast_neuron(at::TensorList tensors,
                                                              const PGPtr& pg, int64_t root_rank,
                                                              int64_t root_tensor, bool async_op,
                                                              int64_t timeout) {
  HostViews host("broadcast", pg);
  auto data = host.of(tensors);
  auto opts = options<c10d::BroadcastOptions>(async_op, timeout);
  opts.rootRank = root_rank;
  opts.rootTensor = root_tensor;
  auto work = issue(pg, [&](c10d::Backend& gloo) { return gloo.broadcast(data, opts); });
  return {tensors.vec(), work};
}

WorkPtr gather_neuron(const TensorLists& outputs, const at::TensorList& inputs, const PGPtr& pg,
                      int64_t root_rank, bool async_op, int64_t timeout) {
  HostViews host("gather", pg);
  auto out = host.of(outputs);
  auto in = host.of(inputs);
  auto opts = options<c10d::GatherOptions>(async_op, timeout);
  opts.rootRank = root_rank;
  return issue(pg, [&](c10d::Backend& gloo) { return gloo.gather(out, in, opts); });
}

std::tuple<std::vector<at::Tensor>, WorkPtr> scatter_neuron(const at::TensorList& outputs,
                                                            const TensorLists& inputs,
                                                            const PGPtr& pg, int64_t root_rank,
                                                            bool async_op, int64_t timeout) {
  HostViews host("scatter", pg);
  auto out = host.of(outputs);
  auto in = host.of(inputs);
  auto opts = options<c10d::ScatterOptions>(async_op, timeout);
  opts.rootRank = root_rank;
  auto work = issue(pg, [&](c10d::Backend& gloo) { return gloo.scatter(out, in, opts); });
  return {outputs.vec(), work};
}

std::tuple<std::vector<at::Tensor>, WorkPtr> alltoall_neuron(const at::TensorList& outputs,
                                                             const at::TensorList& inputs,
                                                             const PGPtr& pg, bool async_op,
                                                             int64_t timeout) {
  HostViews host("all_to_all", pg);
  auto out = host.of(outputs);
  auto in = host.of(inputs);
  auto work = issue(pg, [&](c10d::Backend& gloo) {
    return gloo.alltoall(out, in, options<c10d::AllToAllOptions>(async_op, timeout));
  });
  return {outputs.vec(), work};
}

WorkPtr alltoall_base_neuron(at::Tensor& output, at::Tensor& input, const PGPtr& pg,
                             std::vector<int64_t> output_split_sizes,
                             std::vector<int64_t> input_split_sizes, bool async_op,
                             int64_t timeout) {
  HostViews host("all_to_all", pg);
  auto out = host.of(output);
  auto in = host.of(input);
  return issue(pg, [&](c10d::Backend& gloo) {
    return gloo.alltoall_base(out, in, output_split_sizes, input_split_sizes,
                              options<c10d::AllToAllOptions>(async_op, timeout));
  });
}

// dist.barrier() passes a one-byte tensor on the accelerator (neuron) only to pick this
// kernel; like torch's CPU kernel, the barrier itself ignores it.
WorkPtr barrier_neuron(at::Tensor tensor, const PGPtr& pg, const std::vector<int64_t>& device_ids,
                       bool async_op, int64_t timeout) {
  HostViews host("barrier", pg);
  host.of(tensor);  // device work issued before the barrier is finished at it
  auto opts = options<c10d::BarrierOptions>(async_op, timeout);
  opts.device_ids = device_ids;
  return issue(pg, [&](c10d::Backend& gloo) { return gloo.barrier(opts); });
}

// ---- point to point

WorkPtr send_neuron(at::TensorList tensors, const PGPtr& pg, int64_t dst, int64_t tag) {
  HostViews host("send", pg, dst);
  auto data = host.of(tensors);
  return issue(pg, [&](c10d::Backend& gloo) {
    return gloo.send(data, static_cast<int>(dst), static_cast<int>(tag));
  });
}

WorkPtr recv_neuron(at::TensorList tensors, const PGPtr& pg, int64_t src, int64_t tag) {
  HostViews host("recv", pg, src);
  auto data = host.of(tensors);
  return issue(pg, [&](c10d::Backend& gloo) {
    return gloo.recv(data, static_cast<int>(src), static_cast<int>(tag));
  });
}

WorkPtr recv_any_source_neuron(at::TensorList tensors, const PGPtr& pg, int64_t tag) {
  HostViews host("recv", pg);
  auto data = host.of(tensors);
  return issue(
      pg, [&](c10d::Backend& gloo) { return gloo.recvAnysource(data, static_cast<int>(tag)); });
}

// Drops the dispatcher's "Overriding a previously registered kernel" warning while our
// kernels replace the forwarding PrivateUse1 kernels torch's Ops.cpp registers (expected: those
// would hand neuron tensors to gloo unchanged); every other warning goes to the previous
// handler.
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

// Registers the kernels (once; later calls are no-ops). Called by the distributed layer's
// register() at autoload.
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
    lib->impl("allreduce_coalesced_", TORCH_FN(allreduce_coalesced_neuron));
    lib->impl("reduce_", TORCH_FN(reduce_neuron));
    lib->impl("reduce_scatter_", TORCH_FN(reduce_scatter_neuron));
    lib->impl("_reduce_scatter_base_", TORCH_FN(reduce_scatter_base_neuron));
    lib->impl("reduce_scatter_tensor_coalesced_", TORCH_FN(reduce_scatter_tensor_coalesced_neuron));
    lib->impl("allgather_", TORCH_FN(allgather_neuron));
    lib->impl("_allgather_base_", TORCH_FN(allgather_base_neuron));
    lib->impl("allgather_coalesced_", TORCH_FN(allgather_coalesced_neuron));
    lib->impl("allgather_into_tensor_coalesced_", TORCH_FN(allgather_into_tensor_coalesced_neuron));
    lib->impl("broadcast_", TORCH_FN(broadcast_neuron));
    lib->impl("gather_", TORCH_FN(gather_neuron));
    lib->impl("scatter_", TORCH_FN(scatter_neuron));
    lib->impl("alltoall_", TORCH_FN(alltoall_neuron));
    lib->impl("alltoall_base_", TORCH_FN(alltoall_base_neuron));
    lib->impl("barrier", TORCH_FN(barrier_neuron));
    lib->impl("send", TORCH_FN(send_neuron));
    lib->impl("recv_", TORCH_FN(recv_neuron));
    lib->impl("recv_any_source_", TORCH_FN(recv_any_source_neuron));
  });
}

}  // namespace torch_neuronx
